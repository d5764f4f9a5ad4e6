"""Public tests of part 2, autograd_loop: training with loss.backward() and torch.no_grad()."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import random_problem

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "autograd_loop"
ReLUProblem = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """A problem from seed 1002 and the reference's 10 training steps on it."""
    x, y, w1, w2 = random_problem(1002, n=8, d_in=20, h=10, d_out=3)
    w1_trained, w2_trained = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    losses = reference.train_autograd(x, y, w1_trained, w2_trained, learning_rate=1e-4, steps=10)
    return {
        "seed": 1002,
        "x": x,
        "y": y,
        "w1": w1,
        "w2": w2,
        "learning_rate": 1e-4,
        "steps": 10,
        "losses": losses,
        "w1_trained": w1_trained.detach().clone(),
        "w2_trained": w2_trained.detach().clone(),
    }


def leaf_weights(*weights: torch.Tensor) -> list[torch.Tensor]:
    return [weight.clone().requires_grad_() for weight in weights]


@pytest.mark.points(5)
def test_train_autograd_matches_expected(part: ModuleType, expected: dict[str, Any]) -> None:
    """train_autograd's losses and trained weights match the expected values"""
    w1, w2 = leaf_weights(expected["w1"], expected["w2"])
    losses = part.train_autograd(
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
        what="losses of train_autograd",
        hint="Record loss.item() before the update, and zero the gradients after each update.",
    )
    assert_tensor_close(w1.detach(), expected["w1_trained"], what="w1 after train_autograd")
    assert_tensor_close(w2.detach(), expected["w2_trained"], what="w2 after train_autograd")


@pytest.mark.points(3)
def test_one_step_moves_weights_against_gradient(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device
) -> None:
    """one step of train_autograd sets w to w - learning_rate * gradient"""
    x, y, w1_start, w2_start = make_problem(1200, n=9, d_in=6, h=8, d_out=3, device=device)
    w1_auto, w2_auto = leaf_weights(w1_start, w2_start)
    ((torch.relu(x @ w1_auto) @ w2_auto - y) ** 2).sum().backward()
    assert w1_auto.grad is not None and w2_auto.grad is not None

    w1, w2 = leaf_weights(w1_start, w2_start)
    part.train_autograd(x, y, w1, w2, learning_rate=1e-3, steps=1)
    assert_tensor_close(w1.detach(), w1_start - 1e-3 * w1_auto.grad, what="w1 after one step")
    assert_tensor_close(w2.detach(), w2_start - 1e-3 * w2_auto.grad, what="w2 after one step")


@pytest.mark.points(3)
def test_gradients_are_zeroed_and_weights_stay_leaves(
    part: ModuleType, make_problem: ReLUProblem
) -> None:
    """after train_autograd, w1.grad and w2.grad are zero and w1, w2 are leaves requiring grad"""
    x, y, w1, w2 = make_problem(1201, n=9, d_in=6, h=8, d_out=3)
    w1, w2 = leaf_weights(w1, w2)
    part.train_autograd(x, y, w1, w2, learning_rate=1e-3, steps=3)
    for name, weight in (("w1", w1), ("w2", w2)):
        assert weight.is_leaf and weight.requires_grad, (
            f"{name} is no longer a leaf tensor that requires grad. Update it in place inside "
            f"`with torch.no_grad():` ({name} -= ...), not with `{name} = {name} - ...`."
        )
        assert weight.grad is None or not weight.grad.any(), (
            f"{name}.grad is not zero after training. Zero it after each update "
            f"({name}.grad.zero_()): gradients accumulate across backward() calls."
        )


@pytest.mark.points(2)
def test_weights_are_updated_in_place(part: ModuleType, make_problem: ReLUProblem) -> None:
    """train_autograd changes the caller's w1 and w2 and returns one float loss per step"""
    x, y, w1, w2 = make_problem(1202, n=9, d_in=6, h=8, d_out=3)
    w1, w2 = leaf_weights(w1, w2)
    w1_before, w2_before = w1.detach().clone(), w2.detach().clone()
    losses = part.train_autograd(x, y, w1, w2, learning_rate=1e-3, steps=4)
    assert isinstance(losses, list) and len(losses) == 4, "return one loss per step, as a list."
    assert all(type(value) is float for value in losses), "losses must be floats (loss.item())."
    assert not torch.equal(w1.detach(), w1_before) and not torch.equal(w2.detach(), w2_before), (
        "The caller's w1 and w2 did not change: update them in place (w1 -= ...)."
    )


@pytest.mark.points(2)
def test_train_autograd_reduces_loss_in_float32(
    part: ModuleType, make_problem: ReLUProblem, device: torch.device
) -> None:
    """train_autograd reduces the loss on the running example in float32 on any device"""
    x, y, w1, w2 = make_problem(
        1203, n=64, d_in=1000, h=100, d_out=10, dtype=torch.float32, device=device
    )
    w1, w2 = leaf_weights(w1, w2)
    losses = part.train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=20)
    assert w1.dtype == torch.float32 and w1.device == x.device
    assert len(losses) == 20 and losses[-1] < 0.5 * losses[0], (
        f"the loss went from {losses[0]:.4g} to {losses[-1]:.4g} in {len(losses)} steps; "
        "expected 20 steps that at least halve it."
    )
