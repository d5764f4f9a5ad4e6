"""Public tests of part `mse`: the mean squared error by hand."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from grader.testing import assert_tensor_close

HINT = "Average (pred - target) ** 2 over every element: divide the sum by pred.numel()."


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
