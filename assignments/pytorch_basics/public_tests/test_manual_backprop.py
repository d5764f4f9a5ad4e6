"""Public tests of part 1, manual_backprop: hand-written gradients of the two-layer ReLU net."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import random_problem

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "manual_backprop"
ReLUProblem = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """A problem from seed 1001, the reference's loss and gradients, and 10 training steps."""
    x, y, w1, w2 = random_problem(1001, n=8, d_in=20, h=10, d_out=3)
    loss, grad_w1, grad_w2 = reference.forward_backward(x, y, w1, w2)
    w1_trained, w2_trained = w1.clone(), w2.clone()
    losses = reference.train_manual(x, y, w1_trained, w2_trained, learning_rate=1e-4, steps=10)
    return {
        "seed": 1001,
        "x": x,
        "y": y,
        "w1": w1,
        "w2": w2,
        "loss": loss,
        "grad_w1": grad_w1,
        "grad_w2": grad_w2,
        "learning_rate": 1e-4,
        "steps": 10,
        "losses": losses,
        "w1_trained": w1_trained,
        "w2_trained": w2_trained,
    }


def forbidden_autograd_uses(source: str) -> list[str]:
    """Return a description of each use of autograd in `source` (docstrings don't count)."""
    forbidden_attributes = {"backward", "autograd", "requires_grad", "requires_grad_"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in forbidden_attributes:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr == "func":
            found.append(f"line {node.lineno}: torch.func")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(("torch.autograd", "torch.func")):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {alias.name for alias in node.names}
            if module.startswith(("torch.autograd", "torch.func")) or (
                module == "torch" and names & {"autograd", "func"}
            ):
                found.append(f"line {node.lineno}: from {module} import ...")
    return found


def assert_shaped_like(got: Any, like: torch.Tensor, *, what: str) -> None:
    """Assert `got` is a tensor with the shape, dtype and device of `like`."""
    assert isinstance(got, torch.Tensor), f"{what} must be a tensor, got {type(got).__name__}."
    assert (got.shape, got.dtype, got.device) == (like.shape, like.dtype, like.device), (
        f"{what} is {tuple(got.shape)}, {got.dtype}, on {got.device}; expected "
        f"{tuple(like.shape)}, {like.dtype}, on {like.device} (the same as the weight)."
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_forward_backward_returns_loss_and_gradients(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device, dtype: torch.dtype
) -> None:
    """forward_backward returns a 0-dim loss and gradients shaped like w1 and w2"""
    x, y, w1, w2 = make_problem(1100, n=6, d_in=7, h=5, d_out=4, dtype=dtype, device=device)
    result = part.forward_backward(x, y, w1, w2)
    assert isinstance(result, tuple) and len(result) == 3, (
        "forward_backward must return a tuple (loss, grad_w1, grad_w2)."
    )
    loss, grad_w1, grad_w2 = result
    assert isinstance(loss, torch.Tensor) and loss.dim() == 0, (
        f"loss must be a 0-dim tensor (use .sum(), not .item()); got {loss!r:.80}."
    )
    assert loss.dtype == dtype and loss.device == x.device, (
        f"loss is {loss.dtype} on {loss.device}, expected {dtype} on {x.device}."
    )
    assert_shaped_like(grad_w1, w1, what="grad_w1")
    assert_shaped_like(grad_w2, w2, what="grad_w2")


@pytest.mark.points(4)
def test_forward_backward_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """forward_backward's loss and gradients match the expected values"""
    loss, grad_w1, grad_w2 = part.forward_backward(
        expected["x"], expected["y"], expected["w1"], expected["w2"]
    )
    assert_tensor_close(loss, expected["loss"], what="loss", hint="loss = ((y_pred - y)**2).sum()")
    assert_tensor_close(
        grad_w2,
        expected["grad_w2"],
        what="grad_w2",
        hint="grad_w2 = h_relu.T @ grad_y_pred, with grad_y_pred = 2 * (y_pred - y).",
    )
    assert_tensor_close(
        grad_w1,
        expected["grad_w1"],
        what="grad_w1",
        hint="Check the ReLU step: the gradient is zero where h <= 0.",
    )


@pytest.mark.points(4)
def test_gradients_agree_with_autograd(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device
) -> None:
    """forward_backward's gradients agree with autograd on a fresh problem"""
    x, y, w1, w2 = make_problem(1101, n=11, d_in=9, h=13, d_out=5, device=device)
    loss, grad_w1, grad_w2 = part.forward_backward(x, y, w1, w2)

    w1_auto, w2_auto = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    loss_auto = ((torch.relu(x @ w1_auto) @ w2_auto - y) ** 2).sum()
    loss_auto.backward()
    assert_tensor_close(loss, loss_auto.detach(), what="loss")
    assert w1_auto.grad is not None and w2_auto.grad is not None
    assert_tensor_close(grad_w2, w2_auto.grad, what="grad_w2")
    assert_tensor_close(grad_w1, w1_auto.grad, what="grad_w1")


@pytest.mark.points(2)
def test_forward_backward_uses_no_autograd(part: ModuleType, expected: dict[str, Any]) -> None:
    """forward_backward computes its gradients by hand, without autograd"""
    with torch.no_grad():  # autograd inside forward_backward would fail here
        _, grad_w1, _ = part.forward_backward(
            expected["x"], expected["y"], expected["w1"], expected["w2"]
        )
    assert_tensor_close(grad_w1, expected["grad_w1"], what="grad_w1 computed under no_grad")
    uses = forbidden_autograd_uses(Path(part.__file__).read_text(encoding="utf-8"))
    assert not uses, (
        "manual_backprop.py must not use autograd (.backward, torch.autograd, requires_grad, "
        "torch.func); found: " + "; ".join(uses)
    )


@pytest.mark.points(4)
def test_train_manual_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """train_manual's losses and trained weights match the expected values"""
    w1, w2 = expected["w1"], expected["w2"]
    losses = part.train_manual(
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
        what="losses of train_manual",
        hint="Record loss.item() before updating the weights.",
    )
    assert_tensor_close(w1, expected["w1_trained"], what="w1 after train_manual")
    assert_tensor_close(w2, expected["w2_trained"], what="w2 after train_manual")


@pytest.mark.points(2)
def test_train_manual_updates_weights_in_place(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device
) -> None:
    """train_manual updates the caller's w1 and w2 in place (float32, any device)"""
    x, y, w1, w2 = make_problem(1102, n=6, d_in=7, h=5, d_out=4, dtype=torch.float32, device=device)
    w1_before, w2_before = w1.clone(), w2.clone()
    losses = part.train_manual(x, y, w1, w2, learning_rate=1e-3, steps=3)
    assert isinstance(losses, list) and len(losses) == 3, "train_manual returns one loss per step."
    assert w1.dtype == torch.float32 and w1.device == x.device
    assert not torch.equal(w1, w1_before) and not torch.equal(w2, w2_before), (
        "The caller's w1 and w2 did not change. Update them in place (w1 -= ... or "
        "w1.sub_(...)); `w1 = w1 - ...` only rebinds a local name."
    )


@pytest.mark.points(2)
def test_train_manual_reduces_loss_on_running_example(
    part: ModuleType, make_problem: ReLUProblem
) -> None:
    """train_manual reduces the loss on the lecture's running example (64, 1000, 100, 10)"""
    x, y, w1, w2 = make_problem(1103, n=64, d_in=1000, h=100, d_out=10, dtype=torch.float32)
    losses = part.train_manual(x, y, w1, w2, learning_rate=1e-6, steps=20)
    assert len(losses) == 20, f"expected 20 losses, got {len(losses)}"
    assert all(isinstance(value, float) for value in losses), "losses must be Python floats."
    assert losses[-1] < 0.5 * losses[0], (
        f"the loss went from {losses[0]:.4g} to {losses[-1]:.4g} in 20 steps; expected it "
        "to at least halve. Check the sign of the update and the gradients."
    )
