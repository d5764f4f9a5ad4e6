"""Part 2 (reference): the same network, with gradients from autograd."""

from __future__ import annotations

import torch


def train_autograd(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Train the ReLU net with loss.backward(); update w1 and w2 in place; return the losses.

    w1 and w2 are leaf tensors with requires_grad=True.
    """
    losses: list[float] = []
    for _ in range(steps):
        # Building the forward pass from tensors that require grad records the graph.
        y_pred = (x @ w1.t()).clamp(min=0) @ w2
        loss = ((y_pred - y) ** 2).sum()
        losses.append(loss.item())

        # Fills w1.grad and w2.grad (adding to whatever is already there).
        loss.backward()

        # The update must not be recorded in the graph: inside no_grad the in-place
        # subtraction keeps w1 and w2 as leaves that still require grad.
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            # Gradients accumulate across backward() calls, so clear them before the
            # next step.
            w1.grad.zero_()
            w2.grad.zero_()
    return losses
