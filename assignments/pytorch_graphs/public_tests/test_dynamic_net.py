"""Public tests of part 1, dynamic_net: one shared middle layer, a depth drawn per step."""

from __future__ import annotations

import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import state_of

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "dynamic_net"
KEYS = [
    "input_linear.weight",
    "input_linear.bias",
    "middle_linear.weight",
    "middle_linear.bias",
    "output_linear.weight",
    "output_linear.bias",
]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's DynamicNet seeded with 2001, its output at each depth, 12 steps."""
    d_in, h, d_out, n = 10, 8, 3, 6
    generator = torch.Generator().manual_seed(2001)
    fixture: dict[str, Any] = {
        "seed": 2001,
        "dims": [d_in, h, d_out],
        "x": torch.randn(n, d_in, generator=generator, dtype=torch.float64),
        "y": torch.randn(n, d_out, generator=generator, dtype=torch.float64),
        "learning_rate": 1e-3,
        "steps": 12,
        "rng_seed": 2011,
    }
    torch.manual_seed(2001)
    model = reference.DynamicNet(d_in, h, d_out).to(torch.float64)
    fixture["state"] = state_of(model)
    with torch.no_grad():
        fixture["outputs"] = [model(fixture["x"], depth) for depth in range(4)]
    fixture["losses"] = reference.train_dynamic_net(
        model,
        fixture["x"],
        fixture["y"],
        random.Random(fixture["rng_seed"]),
        learning_rate=fixture["learning_rate"],
        steps=fixture["steps"],
    )
    fixture["state_trained"] = state_of(model)
    return fixture


def loaded_net(part: ModuleType, expected: dict[str, Any]) -> torch.nn.Module:
    model = part.DynamicNet(*expected["dims"]).to(torch.float64)
    model.load_state_dict(expected["state"])
    return model


@pytest.mark.points(2)
def test_three_layers_with_one_shared_middle(part: ModuleType) -> None:
    """DynamicNet has exactly input_linear, middle_linear and output_linear"""
    model = part.DynamicNet(10, 8, 3)
    assert list(model.state_dict()) == KEYS, (
        f"state_dict keys are {list(model.state_dict())}, expected {KEYS}: one middle_linear, "
        "reused for every depth."
    )


@pytest.mark.points(4)
def test_forward_matches_expected_at_every_depth(
    part: ModuleType, expected: dict[str, Any]
) -> None:
    """DynamicNet(x, num_middle) matches the expected output for 0 to 3 middle layers"""
    model = loaded_net(part, expected)
    for depth, want in enumerate(expected["outputs"]):
        with torch.no_grad():
            got = model(expected["x"], depth)
        assert_tensor_close(got, want, what=f"DynamicNet output with num_middle={depth}")


@pytest.mark.points(2)
def test_middle_gradient_sums_every_use(part: ModuleType, device: torch.device) -> None:
    """with num_middle=2, middle_linear's gradient is the sum over both of its uses"""
    torch.manual_seed(2021)
    model = part.DynamicNet(5, 4, 2).to(device=device, dtype=torch.float64)
    x = torch.randn(3, 5, dtype=torch.float64, device=device)
    model(x, 2).sum().backward()
    assert model.middle_linear.weight.grad is not None
    # The same computation, written out with the layer's tensors.
    weights = {name: p.detach().clone().requires_grad_() for name, p in model.named_parameters()}

    def linear(name: str, h: torch.Tensor) -> torch.Tensor:
        return h @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]

    h = linear("input_linear", x).clamp(min=0)
    for _ in range(2):
        h = linear("middle_linear", h).clamp(min=0)
    linear("output_linear", h).sum().backward()
    assert_tensor_close(
        model.middle_linear.weight.grad,
        weights["middle_linear.weight"].grad,
        what="middle_linear.weight.grad with num_middle=2",
    )


@pytest.mark.points(2)
def test_sample_num_middle_draws_once_from_the_given_rng(part: ModuleType) -> None:
    """sample_num_middle(rng) is rng.randint(0, 3), one draw per call"""
    rng, twin = random.Random(2031), random.Random(2031)
    values = [part.sample_num_middle(rng) for _ in range(30)]
    assert values == [twin.randint(0, 3) for _ in range(30)]
    assert rng.random() == twin.random(), "draw exactly once from rng per call"


@pytest.mark.points(4)
def test_train_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """train_dynamic_net's losses and trained weights match the expected values"""
    model = loaded_net(part, expected)
    losses = part.train_dynamic_net(
        model,
        expected["x"],
        expected["y"],
        random.Random(expected["rng_seed"]),
        learning_rate=expected["learning_rate"],
        steps=expected["steps"],
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of train_dynamic_net",
        hint="SGD with momentum 0.9, mse_loss with reduction='sum', one sample_num_middle(rng) "
        "per step.",
    )
    for key, want in expected["state_trained"].items():
        assert_tensor_close(model.state_dict()[key], want, what=f"{key} after training")
