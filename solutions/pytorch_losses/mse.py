"""Part `mse`: the mean squared error, written by hand."""

from __future__ import annotations

import torch


def mse_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Return the mean squared error between pred and target, as a 0-dim tensor.

    pred and target have the same shape (any number of dimensions, at least one element),
    the same float dtype (float32 or float64) and the same device. The result equals
    torch.nn.functional.mse_loss(pred, target) (reduction "mean"): the average of
    (pred - target) ** 2 over every element, not only over the first dimension. It is a
    0-dim tensor of pred's dtype and device, and gradients flow through it to pred.

    Not allowed here: torch.nn.functional.mse_loss, torch.nn.MSELoss and every other built-in
    loss (any *_loss function, nn.*Loss class or torch.distributions). Use tensor
    arithmetic. Usual mistakes: summing instead of averaging, averaging over one dimension
    only, calling .item() or torch.tensor(...) on the result (no gradient flows back).
    """
    # BEGIN SOLUTION: average (pred - target) ** 2 over every element
    diff = pred - target
    return (diff * diff).sum() / diff.numel()
    # END SOLUTION
