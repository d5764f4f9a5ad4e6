"""Public tests of part 3, custom_sigmoid: a torch.autograd.Function with its own backward."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest
import torch
from conftest import random_problem

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "custom_sigmoid"
ReLUProblem = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]
# Names whose use would mean the sigmoid is not your own: the built-in sigmoids, and the
# built-ins that compute one inside (glu, silu, softmax).
FORBIDDEN_NAMES = {"sigmoid", "sigmoid_", "expit", "Sigmoid", "logsigmoid", "LogSigmoid"}
FORBIDDEN_NAMES |= {"glu", "GLU", "silu", "silu_", "SiLU", "softmax", "Softmax", "log_softmax"}
FORBIDDEN_NAMES |= {"softplus", "Softplus", "binary_cross_entropy_with_logits", "BCEWithLogitsLoss"}
FORBIDDEN_NAMES |= {"soft_margin_loss", "SoftMarginLoss", "multilabel_soft_margin_loss"}


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's sigmoid and its gradient on both tails, zero and ordinary inputs, and
    10 training steps of the sigmoid net on a problem from seed 1003."""
    x, y, w1, w2 = random_problem(1003, n=8, d_in=20, h=10, d_out=3)
    generator = torch.Generator().manual_seed(1013)
    sigmoid_input = torch.cat(
        [
            torch.tensor([-1e4, -50.0, -10.0, 0.0, 10.0, 50.0, 1e4], dtype=torch.float64),
            3 * torch.randn(13, generator=generator, dtype=torch.float64),
        ]
    ).requires_grad_()
    sigmoid_output = reference.sigmoid(sigmoid_input)
    # The gradient of sum(output * upstream) is upstream * y * (1 - y).
    upstream = torch.randn(sigmoid_input.shape, generator=generator, dtype=torch.float64)
    (sigmoid_grad,) = torch.autograd.grad(sigmoid_output, sigmoid_input, upstream)
    w1_trained, w2_trained = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    losses = reference.train_sigmoid_net(x, y, w1_trained, w2_trained, learning_rate=3e-3, steps=10)
    return {
        "seed": 1003,
        "x": x,
        "y": y,
        "w1": w1,
        "w2": w2,
        "sigmoid_input": sigmoid_input.detach(),
        "sigmoid_upstream": upstream,
        "sigmoid_output": sigmoid_output.detach(),
        "sigmoid_grad": sigmoid_grad,
        "learning_rate": 3e-3,
        "steps": 10,
        "losses": losses,
        "w1_trained": w1_trained.detach().clone(),
        "w2_trained": w2_trained.detach().clone(),
    }


def builtin_sigmoid_uses(source: str) -> list[str]:
    """Return each use of a built-in sigmoid in `source`, e.g. `torch.sigmoid` or `x.sigmoid()`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        # Your own `Sigmoid` and `sigmoid` are plain names; the built-ins are reached as
        # attributes (torch.sigmoid, F.sigmoid, nn.Sigmoid, x.sigmoid) or imported by name.
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_NAMES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            found += [
                f"line {node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name in FORBIDDEN_NAMES
            ]
    return found


@pytest.mark.points(3)
def test_sigmoid_values_match_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """sigmoid(x) matches the expected values, from -1e4 to 1e4"""
    output = part.sigmoid(expected["sigmoid_input"])
    assert_tensor_close(
        output.detach(), expected["sigmoid_output"], what="sigmoid(x)", hint="1 / (1 + exp(-x))"
    )


@pytest.mark.points(3)
def test_sigmoid_gradient_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """the gradient through sigmoid matches grad_y * y * (1 - y)"""
    x = expected["sigmoid_input"].clone().requires_grad_()
    (grad_x,) = torch.autograd.grad(part.sigmoid(x), x, expected["sigmoid_upstream"])
    assert_tensor_close(
        grad_x,
        expected["sigmoid_grad"],
        what="gradient of sigmoid",
        hint="backward returns grad_y * y * (1 - y), with the y saved in forward.",
    )


@pytest.mark.points(2)
def test_sigmoid_passes_gradcheck(part: ModuleType) -> None:
    """Sigmoid passes torch.autograd.gradcheck in float64"""
    generator = torch.Generator().manual_seed(1300)
    x = (4 * torch.randn(5, 7, generator=generator, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(part.sigmoid, (x,), eps=1e-6, atol=1e-6)


@pytest.mark.points(3)
def test_sigmoid_is_finite_for_large_inputs(part: ModuleType, device: torch.device) -> None:
    """sigmoid and its gradient stay finite for |x| = 1e4 in float32"""
    x = torch.tensor([-1e4, -100.0, -1.0, 0.0, 1.0, 100.0, 1e4], device=device)
    x.requires_grad_()
    y = part.sigmoid(x)
    (grad_x,) = torch.autograd.grad(y.sum(), x)
    hint = (
        "exp(-x) overflows to inf for large negative x. Only ever exponentiate a number <= 0, "
        "e.g. e = exp(-|x|), and pick the formula by the sign of x."
    )
    assert torch.isfinite(y).all(), f"sigmoid gave {y.tolist()} for {x.tolist()}.\nHint: {hint}"
    assert torch.isfinite(grad_x).all(), (
        f"the gradient of sigmoid is {grad_x.tolist()} for {x.tolist()}.\nHint: {hint}"
    )
    want = torch.tensor([0.0, 0.0, 0.26894142, 0.5, 0.73105858, 1.0, 1.0], device=device)
    assert_tensor_close(y.detach(), want, what="sigmoid of float32 inputs", hint=hint)


@pytest.mark.points(2)
def test_sigmoid_uses_the_custom_function(part: ModuleType, device: torch.device) -> None:
    """sigmoid goes through Sigmoid.apply and keeps the input's shape, dtype and device"""
    x = torch.randn(3, 4, device=device, dtype=torch.float64, requires_grad=True)
    y = part.sigmoid(x)
    assert isinstance(y, torch.Tensor) and (y.shape, y.dtype, y.device) == (
        x.shape,
        x.dtype,
        x.device,
    ), "sigmoid(x) must have the shape, dtype and device of x."
    assert getattr(y.grad_fn, "_forward_cls", None) is part.Sigmoid, (
        f"sigmoid(x).grad_fn is {type(y.grad_fn).__name__}, not your Sigmoid's backward: "
        "return Sigmoid.apply(x)."
    )


@pytest.mark.points(2)
def test_no_builtin_sigmoid(part: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """custom_sigmoid.py computes the sigmoid itself, without torch's built-in one"""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("custom_sigmoid.py called torch's built-in sigmoid")

    for owner, name in [
        (torch, "sigmoid"),
        (torch.Tensor, "sigmoid"),
        (torch.special, "expit"),
        (torch.nn.functional, "sigmoid"),
    ]:
        monkeypatch.setattr(owner, name, refuse)
    x = torch.linspace(-5, 5, 11, dtype=torch.float64, requires_grad=True)
    part.sigmoid(x).sum().backward()

    uses = builtin_sigmoid_uses(Path(part.__file__).read_text(encoding="utf-8"))
    assert not uses, (
        "custom_sigmoid.py must not use torch.sigmoid, torch.special.expit, F.sigmoid, "
        "nn.Sigmoid, Tensor.sigmoid or logsigmoid, nor glu, silu, softmax, softplus or "
        "the BCE-with-logits or soft margin losses (a sigmoid inside or in the gradient); "
        "found: " + "; ".join(uses)
    )


@pytest.mark.points(3)
def test_train_sigmoid_net_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """train_sigmoid_net's losses and trained weights match the expected values"""
    w1 = expected["w1"].clone().requires_grad_()
    w2 = expected["w2"].clone().requires_grad_()
    losses = part.train_sigmoid_net(
        expected["x"],
        expected["y"],
        w1,
        w2,
        learning_rate=expected["learning_rate"],
        steps=expected["steps"],
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of train_sigmoid_net",
        hint="y_pred = sigmoid(x @ w1) @ w2; record loss.item() before the update.",
    )
    assert_tensor_close(w1.detach(), expected["w1_trained"], what="w1 after train_sigmoid_net")
    assert_tensor_close(w2.detach(), expected["w2_trained"], what="w2 after train_sigmoid_net")


@pytest.mark.points(2)
def test_train_sigmoid_net_leaves_clean_weights(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device
) -> None:
    """after train_sigmoid_net, the weights are updated leaves with zero gradients"""
    x, y, w1, w2 = make_problem(1301, n=9, d_in=6, h=8, d_out=3, device=device)
    w1_before = w1.clone()
    w1.requires_grad_()
    w2.requires_grad_()
    losses = part.train_sigmoid_net(x, y, w1, w2, learning_rate=1e-2, steps=3)
    assert isinstance(losses, list) and len(losses) == 3, "return one loss per step, as a list."
    assert not torch.equal(w1.detach(), w1_before), "w1 did not change: update it in place."
    for name, weight in (("w1", w1), ("w2", w2)):
        assert weight.is_leaf and weight.requires_grad, (
            f"{name} is no longer a leaf that requires grad: update it inside torch.no_grad()."
        )
        assert weight.grad is None or not weight.grad.any(), (
            f"{name}.grad is not zero after training: zero it after each update."
        )
