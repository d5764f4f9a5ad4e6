"""Part 2 (reference): data-dependent control flow, eager and exported."""

from __future__ import annotations

import torch
from torch import nn


def conditional(
    x: torch.Tensor, z: torch.Tensor | float, w1: torch.Tensor, w2: torch.Tensor
) -> torch.Tensor:
    """x @ w1 where z > 0, else x @ w2, with a plain Python `if`."""
    if z > 0:
        return x @ w1
    return x @ w2


def _use_w1(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return x @ w1


def _use_w2(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return x @ w2


class Conditional(nn.Module):
    """The same choice as a graph operation: torch.cond keeps both branches in the graph."""

    def forward(
        self, x: torch.Tensor, z: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
    ) -> torch.Tensor:
        result: torch.Tensor = torch.cond(z > 0, _use_w1, _use_w2, (x, w1, w2))
        return result


class PythonConditional(nn.Module):
    """`conditional` wrapped in a module, so that torch.export can trace it."""

    def forward(
        self, x: torch.Tensor, z: float, w1: torch.Tensor, w2: torch.Tensor
    ) -> torch.Tensor:
        return conditional(x, z, w1, w2)


def export_conditional(
    x: torch.Tensor, z: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> torch.export.ExportedProgram:
    """A static graph holding both branches, chosen at run time by the value of z."""
    return torch.export.export(PythonConditional(), (x, float(z), w1, w2))


def trace_conditional(
    x: torch.Tensor, z: float, w1: torch.Tensor, w2: torch.Tensor
) -> torch.export.ExportedProgram:
    """The Python `if` runs once, while tracing: the graph holds only the branch z chose."""
    return torch.export.export(PythonConditional(), (x, float(z), w1, w2))
