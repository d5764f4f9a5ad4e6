"""Public tests of part `mse`: the mean squared error by hand."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from grader.student.fixtures import public_fixture
from grader.testing import assert_tensor_close

HINT = "Average (pred - target) ** 2 over every element: divide the sum by pred.numel()."


def loss_and_grad(
    loss_function: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    other: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss at x and its gradient with respect to x."""
    x = x.clone().requires_grad_(True)
    loss = loss_function(x, other)
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """Inputs, the reference's loss and its gradient with respect to pred (float64)."""
    generator = torch.Generator().manual_seed(3001)
    pred = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    target = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    loss, grad = loss_and_grad(reference.mse_loss, pred, target)
    return {"pred": pred, "target": target, "loss": loss, "grad": grad}


@pytest.mark.points(1)
def test_mse_returns_a_0dim_tensor(part: ModuleType) -> None:
    """mse_loss returns a 0-dim tensor of pred's dtype"""
    pred = torch.zeros(3, 2, dtype=torch.float64)
    loss = part.mse_loss(pred, torch.ones(3, 2, dtype=torch.float64))
    assert isinstance(loss, torch.Tensor), (
        f"mse_loss returned {type(loss).__name__}, expected a tensor (do not call .item())."
    )
    assert loss.dim() == 0, f"mse_loss returned shape {tuple(loss.shape)}, expected ()."
    assert loss.dtype == pred.dtype, f"mse_loss returned {loss.dtype}, expected {pred.dtype}."


@pytest.mark.points(2)
def test_mse_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """mse_loss(pred, target) matches the expected value"""
    got = part.mse_loss(expected["pred"].clone(), expected["target"].clone())
    assert_tensor_close(got, expected["loss"], what="mse_loss(pred, target)", hint=HINT)


@pytest.mark.points(2)
def test_mse_gradient_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """the gradient of mse_loss with respect to pred matches the expected one"""
    pred = expected["pred"].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(part.mse_loss(pred, expected["target"].clone()), pred)
    assert_tensor_close(
        grad,
        expected["grad"],
        what="the gradient of mse_loss with respect to pred",
        hint="It is 2 * (pred - target) / pred.numel(); build the loss with torch operations.",
    )


@pytest.mark.points(1)
def test_mse_agrees_with_torch_on_3d_inputs(part: ModuleType) -> None:
    """mse_loss agrees with F.mse_loss on a (2, 3, 4) float32 input"""
    generator = torch.Generator().manual_seed(3101)
    pred = torch.randn(2, 3, 4, generator=generator)
    target = torch.randn(2, 3, 4, generator=generator)
    assert_tensor_close(
        part.mse_loss(pred, target), F.mse_loss(pred, target), what="mse_loss", hint=HINT
    )
