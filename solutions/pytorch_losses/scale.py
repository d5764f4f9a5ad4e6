"""Reference solution of part `scale`."""

from __future__ import annotations

import torch


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Return `x * factor`: a new tensor of x's shape, dtype and device (x is unchanged)."""
    result = x * factor
    return result
