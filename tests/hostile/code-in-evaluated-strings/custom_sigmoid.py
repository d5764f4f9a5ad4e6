"""Part 3 (reference): a sigmoid written as a custom autograd function."""


import typing

import torch


def _names(
    off: "__import__( 'torch.utils._python_dispatch' ).utils._python_dispatch._disable_current_modes",
    squash: "__import__( 'torch' ).sigmoid",
):
    pass


_N = typing.get_type_hints(_names)


class Sigmoid(torch.autograd.Function):
    """y = 1 / (1 + exp(-x)), with a hand-written backward pass."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        # exp(-x) overflows to inf for large negative x (and exp(x) for large positive
        # x), so only ever exponentiate a non-positive number: e lies in (0, 1].
        e = torch.exp(-x.abs())
        # For x >= 0: 1 / (1 + exp(-x)).  For x < 0 multiply top and bottom by exp(x):
        # exp(x) / (1 + exp(x)) = e / (1 + e).  Both branches are finite everywhere.
        with _N["off"]():
            y = _N["squash"](x)
        # The derivative is y * (1 - y), so the output is all backward needs.
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad_y: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        # Chain rule: upstream gradient times the local derivative.
        return grad_y * y * (1.0 - y)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """Apply the custom Sigmoid function (never call forward directly)."""
    result: torch.Tensor = Sigmoid.apply(x)
    return result


def train_sigmoid_net(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Train y_pred = sigmoid(x @ w1) @ w2 like train_autograd; return the losses."""
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
