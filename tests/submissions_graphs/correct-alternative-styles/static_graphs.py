"""torch.cond with lambdas, and export called through the module's own names."""

import torch
from torch import nn
from torch.export import export


def conditional(x, z, w1, w2):
    return torch.matmul(x, w1) if z > 0 else torch.matmul(x, w2)


class Conditional(nn.Module):
    def forward(self, x, z, w1, w2):
        return torch.cond(
            z > 0,
            lambda a, b, c: torch.matmul(a, b),
            lambda a, b, c: torch.matmul(a, c),
            [x, w1, w2],
        )


class PythonConditional(nn.Module):
    def forward(self, x, z, w1, w2):
        return conditional(x, z, w1, w2)


def export_conditional(x, z, w1, w2):
    return export(Conditional(), args=(x, z, w1, w2))


def trace_conditional(x, z, w1, w2):
    return export(PythonConditional(), args=(x, float(z), w1, w2))
