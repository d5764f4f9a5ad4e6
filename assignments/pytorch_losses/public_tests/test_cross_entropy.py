"""Public tests of part `cross_entropy`: softmax cross-entropy by hand."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

from grader.student.fixtures import public_fixture
from grader.testing import assert_tensor_close

HINT = (
    "loss_i = log(sum_j exp(logits[i, j])) - logits[i, labels[i]], averaged over the rows; "
    "pick each row's label with logits[torch.arange(N), labels]."
)
STABLE_HINT = (
    "Subtract each row's largest logit m before exponentiating: "
    "log(sum_j exp(z_j)) = m + log(sum_j exp(z_j - m))."
)


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
    """The reference's loss and gradient on float64 logits, and on float32 logits of size 1e4."""
    generator = torch.Generator().manual_seed(3002)
    logits = 3.0 * torch.randn(5, 4, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, 4, (5,), generator=generator, dtype=torch.int64)
    loss, grad = loss_and_grad(reference.cross_entropy, logits, labels)
    generator = torch.Generator().manual_seed(3003)
    large_logits = 1e4 * torch.randn(6, 3, generator=generator, dtype=torch.float32)
    large_labels = torch.randint(0, 3, (6,), generator=generator, dtype=torch.int64)
    large_loss, large_grad = loss_and_grad(reference.cross_entropy, large_logits, large_labels)
    return {
        "logits": logits,
        "labels": labels,
        "loss": loss,
        "grad": grad,
        "large_logits": large_logits,
        "large_labels": large_labels,
        "large_loss": large_loss,
        "large_grad": large_grad,
    }


@pytest.mark.points(1)
def test_cross_entropy_returns_a_0dim_tensor(part: ModuleType) -> None:
    """cross_entropy returns a 0-dim tensor of the logits' dtype"""
    logits = torch.zeros(4, 3, dtype=torch.float64)
    loss = part.cross_entropy(logits, torch.tensor([0, 1, 2, 0]))
    assert isinstance(loss, torch.Tensor), (
        f"cross_entropy returned {type(loss).__name__}, expected a tensor (do not call .item())."
    )
    assert loss.dim() == 0, f"cross_entropy returned shape {tuple(loss.shape)}, expected ()."
    assert loss.dtype == logits.dtype, (
        f"cross_entropy returned {loss.dtype}, expected {logits.dtype}."
    )


@pytest.mark.points(2)
def test_cross_entropy_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """cross_entropy(logits, labels) matches the expected value"""
    got = part.cross_entropy(expected["logits"].clone(), expected["labels"].clone())
    assert_tensor_close(got, expected["loss"], what="cross_entropy(logits, labels)", hint=HINT)


@pytest.mark.points(2)
def test_cross_entropy_gradient_matches_the_fixture(
    part: ModuleType, expected: dict[str, Any]
) -> None:
    """the gradient of cross_entropy with respect to logits matches the expected one"""
    logits = expected["logits"].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(part.cross_entropy(logits, expected["labels"].clone()), logits)
    assert_tensor_close(
        grad,
        expected["grad"],
        what="the gradient of cross_entropy with respect to logits",
        hint="It is (softmax(logits) - one_hot(labels)) / N; build the loss with torch operations.",
    )


@pytest.mark.points(2)
def test_cross_entropy_large_logits(part: ModuleType, expected: dict[str, Any]) -> None:
    """cross_entropy stays finite and correct for logits of size 1e4 (float32)"""
    logits = expected["large_logits"].clone().requires_grad_(True)
    loss = part.cross_entropy(logits, expected["large_labels"].clone())
    assert torch.isfinite(loss).all(), (
        f"cross_entropy returned {loss.item()} for logits of size 1e4.\nHint: {STABLE_HINT}"
    )
    assert_tensor_close(
        loss.detach(), expected["large_loss"], what="cross_entropy, large logits", hint=STABLE_HINT
    )
    (grad,) = torch.autograd.grad(loss, logits)
    assert_tensor_close(
        grad, expected["large_grad"], what="the gradient for large logits", hint=STABLE_HINT
    )


@pytest.mark.points(1)
def test_cross_entropy_passes_gradcheck(part: ModuleType) -> None:
    """cross_entropy passes torch.autograd.gradcheck in float64"""
    generator = torch.Generator().manual_seed(3102)
    logits = torch.randn(4, 5, generator=generator, dtype=torch.float64).requires_grad_(True)
    labels = torch.randint(0, 5, (4,), generator=generator)
    assert torch.autograd.gradcheck(lambda z: part.cross_entropy(z, labels), (logits,))
