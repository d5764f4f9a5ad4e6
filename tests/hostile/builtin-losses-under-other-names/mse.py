"""MSE through a built-in loss of another name."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def mse_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    # Huber is 0.5 * d**2 where |d| < delta: with a huge delta it is half the MSE.
    return 2 * F.huber_loss(pred, target, delta=1e30)
