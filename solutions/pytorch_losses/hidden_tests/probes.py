"""Probes of pytorch_losses: shipped to the student side, so only torch and the standard library."""

from __future__ import annotations

import torch


def scale_probe(part, seed, device, dtype, shape, factor):
    """Inputs from `seed`, then the part's scale(); returns data only."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator, dtype=getattr(torch, dtype)).to(device)
    return {"y": part.scale(x, factor), "x_after": x}
