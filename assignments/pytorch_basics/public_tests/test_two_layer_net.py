"""Public tests of part 4, two_layer_net: nn.Module subclasses and training with torch.optim."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import random_problem, state_of
from torch import nn

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "two_layer_net"
STATE_KEYS = ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
D_IN, H, D_OUT = 20, 10, 3  # the sizes the fixture was made with


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's nets, seeded with 1004, their outputs and 10 training steps."""
    x, y, _, _ = random_problem(1004, n=8, d_in=D_IN, h=H, d_out=D_OUT)
    torch.manual_seed(1004)
    net = reference.TwoLayerNet(D_IN, H, D_OUT).to(torch.float64)
    block = reference.ParallelBlock(D_IN, D_OUT).to(torch.float64)
    with torch.no_grad():
        net_output, block_output = net(x), block(x)
    fixture = {
        "seed": 1004,
        "x": x,
        "y": y,
        "net_state": state_of(net),
        "net_output": net_output,
        "block_state": state_of(block),
        "block_output": block_output,
        "learning_rate": 5e-2,
        "steps": 10,
    }
    fixture["losses"] = reference.train_two_layer_net(net, x, y, learning_rate=5e-2, steps=10)
    fixture["net_state_trained"] = state_of(net)
    return fixture


def assert_linear_layers(
    model: nn.Module, shapes: dict[str, tuple[int, ...]], *, what: str
) -> None:
    """Assert `model` holds exactly linear1 and linear2 (nn.Linear) with these shapes."""
    state = model.state_dict()
    assert list(state) == STATE_KEYS, (
        f"{what}.state_dict() has keys {list(state)}, expected {STATE_KEYS}. Assign "
        "self.linear1 and self.linear2 (nn.Linear) in __init__, after super().__init__()."
    )
    for name in ("linear1", "linear2"):
        assert isinstance(getattr(model, name), nn.Linear), f"{what}.{name} must be an nn.Linear."
    got_shapes = {key: tuple(value.shape) for key, value in state.items()}
    assert got_shapes == shapes, f"{what} has parameter shapes {got_shapes}, expected {shapes}."
    assert len(list(model.parameters())) == 4, f"{what} must have exactly 4 parameters."


@pytest.mark.points(3)
def test_two_layer_net_has_linear1_and_linear2(part: ModuleType) -> None:
    """TwoLayerNet(D_in, H, D_out) holds linear1: D_in -> H and linear2: H -> D_out"""
    model = part.TwoLayerNet(7, 5, 2)
    assert isinstance(model, nn.Module)
    shapes = {
        "linear1.weight": (5, 7),
        "linear1.bias": (5,),
        "linear2.weight": (2, 5),
        "linear2.bias": (2,),
    }
    assert_linear_layers(model, shapes, what="TwoLayerNet(7, 5, 2)")


@pytest.mark.points(4)
def test_two_layer_net_forward_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """TwoLayerNet's forward pass matches the expected output for given weights"""
    model = part.TwoLayerNet(D_IN, H, D_OUT).to(torch.float64)
    model.load_state_dict(expected["net_state"])
    with torch.no_grad():
        output = model(expected["x"])
    assert_tensor_close(
        output, expected["net_output"], what="TwoLayerNet output", hint="linear2(relu(linear1(x)))"
    )


@pytest.mark.points(2)
def test_two_layer_net_keeps_batch_dtype_and_device(part: ModuleType, device: torch.device) -> None:
    """TwoLayerNet maps (N, D_in) to (N, D_out) on the model's device and dtype"""
    model = part.TwoLayerNet(6, 4, 3).to(device)
    x = torch.randn(5, 6, device=device)
    output = model(x)
    assert isinstance(output, torch.Tensor)
    assert (tuple(output.shape), output.dtype, output.device) == ((5, 3), x.dtype, x.device), (
        f"TwoLayerNet(6, 4, 3) on a (5, 6) input gave {tuple(output.shape)}, {output.dtype}, "
        f"on {output.device}; expected (5, 3), {x.dtype}, on {x.device}."
    )


@pytest.mark.points(2)
def test_parallel_block_has_linear1_and_linear2(part: ModuleType) -> None:
    """ParallelBlock(D_in, D_out) holds linear1 and linear2, both D_in -> D_out"""
    model = part.ParallelBlock(7, 2)
    assert isinstance(model, nn.Module)
    shapes = {
        "linear1.weight": (2, 7),
        "linear1.bias": (2,),
        "linear2.weight": (2, 7),
        "linear2.bias": (2,),
    }
    assert_linear_layers(model, shapes, what="ParallelBlock(7, 2)")


@pytest.mark.points(3)
def test_parallel_block_forward_matches_expected(
    part: ModuleType, expected: dict[str, Any]
) -> None:
    """ParallelBlock's forward pass matches the expected output for given weights"""
    model = part.ParallelBlock(D_IN, D_OUT).to(torch.float64)
    model.load_state_dict(expected["block_state"])
    with torch.no_grad():
        output = model(expected["x"])
    assert_tensor_close(
        output,
        expected["block_output"],
        what="ParallelBlock output",
        hint="(linear1(x) * linear2(x)).clamp(min=0)",
    )


@pytest.mark.points(4)
def test_train_two_layer_net_matches_expected(
    part: ModuleType,
    expected: dict[str, Any],
    make_sequential_net: Callable[[int, int, int], nn.Sequential],
) -> None:
    """train_two_layer_net's losses and trained weights match the expected values"""
    model = make_sequential_net(D_IN, H, D_OUT).to(torch.float64)
    model.load_state_dict(expected["net_state"])
    losses = part.train_two_layer_net(
        model,
        expected["x"],
        expected["y"],
        learning_rate=expected["learning_rate"],
        steps=expected["steps"],
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of train_two_layer_net",
        hint="Use SGD(model.parameters(), lr=learning_rate) and mse_loss; zero_grad every step.",
    )
    for key, want in expected["net_state_trained"].items():
        assert_tensor_close(model.state_dict()[key], want, what=f"{key} after training")


@pytest.mark.points(2)
def test_train_two_layer_net_reduces_loss(
    part: ModuleType, make_sequential_net: Callable[[int, int, int], nn.Sequential]
) -> None:
    """train_two_layer_net reduces the loss on the running example (64, 1000, 100, 10)"""
    generator = torch.Generator().manual_seed(1400)
    x = torch.randn(64, 1000, generator=generator)
    y = torch.randn(64, 10, generator=generator)
    torch.manual_seed(1401)
    model = make_sequential_net(1000, 100, 10)
    losses = part.train_two_layer_net(model, x, y, learning_rate=0.1, steps=20)
    assert isinstance(losses, list) and len(losses) == 20, "return one loss per step, as a list."
    assert all(type(value) is float for value in losses), "losses must be floats (loss.item())."
    assert losses[-1] < 0.9 * losses[0], (
        f"the loss went from {losses[0]:.4g} to {losses[-1]:.4g} in 20 steps with lr=0.1."
    )
