"""Part 3: a sigmoid written as your own autograd function.

Lecture idea: every autograd operation is a pair of functions, `forward` (compute the
output, save what the gradient needs) and `backward` (turn d loss / d output into
d loss / d input). `torch.autograd.Function` lets you write such a pair yourself:

  - `forward(ctx, x)` computes y and calls `ctx.save_for_backward(...)` with the tensors
    `backward` needs;
  - `backward(ctx, grad_y)` reads them back from `ctx.saved_tensors` and returns the
    gradient with respect to x (same shape as x);
  - call it through `Sigmoid.apply(x)`, never `Sigmoid.forward(...)` directly.

Rules for this file: write the sigmoid yourself. Do not use `torch.sigmoid`,
`torch.special.expit`, `torch.nn.functional.sigmoid`, `torch.nn.Sigmoid`,
`Tensor.sigmoid` or `logsigmoid`, nor the built-ins with a sigmoid inside or in their
gradient (`glu`, `silu`, `softmax`, `softplus`, the BCE-with-logits and soft margin
losses); the grader checks.

Numerical stability matters: outputs and gradients must stay finite for inputs as large
as |x| = 1e4 in float32. `1 / (1 + torch.exp(-x))` overflows `exp` for large negative x
(and the equivalent form with `exp(x)` for large positive x). Hint: only ever
exponentiate a number <= 0, e.g. `e = exp(-|x|)`, and choose the formula by the sign of x.
Since sigma'(x) = y * (1 - y), saving the output y is all backward needs.
"""

from __future__ import annotations

import torch


class Sigmoid(torch.autograd.Function):
    """y = 1 / (1 + exp(-x)) elementwise, with a hand-written backward pass."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        """Return sigmoid(x) (same shape, dtype and device as x); save y for backward."""
        # BEGIN SOLUTION
        # exp(-x) overflows to inf for large negative x (and exp(x) for large positive
        # x), so only ever exponentiate a non-positive number: e lies in (0, 1].
        e = torch.exp(-x.abs())
        # For x >= 0: 1 / (1 + exp(-x)).  For x < 0 multiply top and bottom by exp(x):
        # exp(x) / (1 + exp(x)) = e / (1 + e).  Both branches are finite everywhere.
        y = torch.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        # The derivative is y * (1 - y), so the output is all backward needs.
        ctx.save_for_backward(y)
        return y
        # END SOLUTION

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad_y: torch.Tensor) -> torch.Tensor:
        """Return grad_x = grad_y * y * (1 - y), using the y saved by forward."""
        # BEGIN SOLUTION
        (y,) = ctx.saved_tensors
        # Chain rule: upstream gradient times the local derivative.
        return grad_y * y * (1.0 - y)
        # END SOLUTION


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """Return `Sigmoid.apply(x)`."""
    # BEGIN SOLUTION
    result: torch.Tensor = Sigmoid.apply(x)
    return result
    # END SOLUTION


def train_sigmoid_net(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Train like `train_autograd` (part 2), with the ReLU replaced by your sigmoid.

    Forward pass: `y_pred = sigmoid(x @ w1) @ w2`, `loss = ((y_pred - y) ** 2).sum()`,
    using the `sigmoid` function above. Everything else is as in part 2: record
    `loss.item()` before the update, `loss.backward()`, update w1 and w2 in place inside
    `torch.no_grad()`, zero their gradients.

    Returns the list of `steps` losses.
    """
    # BEGIN SOLUTION
    losses: list[float] = []
    for _ in range(steps):
        y_pred = sigmoid(x @ w1) @ w2
        loss = ((y_pred - y) ** 2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses
    # END SOLUTION
