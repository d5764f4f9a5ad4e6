"""Part 2: static graphs, and control flow that depends on the data.

Lecture idea: a static graph is built once and then run many times, so it can be
optimised, saved and run without Python. Control flow is the hard part: a Python `if`
runs while the graph is *built*, not when it runs. The lecture contrasts TensorFlow's
`tf.cond` (both branches in the graph) with tracing (which records only the branch
the example took); in PyTorch that was `torch.jit.script` versus `torch.jit.trace`.

TorchScript is deprecated: in the torch this course uses, `torch.jit.script` and
`torch.jit.trace` emit a DeprecationWarning pointing to `torch.export`. So this part
uses the current equivalents:

  - `torch.cond(pred, true_fn, false_fn, operands)` is control flow *as a graph
    operation*: `torch.export.export` keeps both branches, and the program picks one at
    run time from the value of `pred`;
  - exporting a plain Python `if` whose condition is a Python number *traces* it: the
    `if` runs once, on the example's value, and the program holds only the branch taken.
    Unlike `torch.jit.trace`, which silently returned the frozen branch's answer for
    any input, `torch.export` records the value it assumed and the program refuses
    (raises) when called with another one. (A Python `if` on a *tensor's* value cannot
    be exported at all: torch.export stops with a data-dependent error.)

Running example: x (N, D_in), w1 and w2 (D_in, D_out), z a number; the result is
`x @ w1` when z > 0 and `x @ w2` otherwise (z == 0 takes w2). Every function works in
float32 and float64 and on any device.
"""

from __future__ import annotations

import torch
from torch import nn


def conditional(
    x: torch.Tensor, z: torch.Tensor | float, w1: torch.Tensor, w2: torch.Tensor
) -> torch.Tensor:
    """Eager PyTorch: `x @ w1` if z > 0 else `x @ w2`, with a plain Python `if`.

    z is a 0-dim tensor or a Python number. In eager mode the `if` simply runs every
    call: this is the dynamic graph of part 1.
    """
    # BEGIN SOLUTION
    if z > 0:
        return x @ w1
    return x @ w2
    # END SOLUTION


def _use_w1(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:  # SOLUTION
    return x @ w1


def _use_w2(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:  # SOLUTION
    return x @ w2


class Conditional(nn.Module):
    """The same choice as a graph operation, with `torch.cond`.

    `forward(x, z, w1, w2)`, z a 0-dim tensor, returns
    `torch.cond(z > 0, true_fn, false_fn, (x, w1, w2))` where `true_fn(x, w1, w2)`
    returns `x @ w1` and `false_fn(x, w1, w2)` returns `x @ w2` (define them as
    functions; both take all the operands). No parameters. It runs eagerly too.
    """

    def forward(
        self, x: torch.Tensor, z: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
    ) -> torch.Tensor:
        # BEGIN SOLUTION
        result: torch.Tensor = torch.cond(z > 0, _use_w1, _use_w2, (x, w1, w2))
        return result
        # END SOLUTION


class PythonConditional(nn.Module):
    """`forward(x, z, w1, w2)` returns `conditional(x, z, w1, w2)`: a module around the
    Python `if`, because torch.export exports modules."""

    def forward(
        self, x: torch.Tensor, z: float, w1: torch.Tensor, w2: torch.Tensor
    ) -> torch.Tensor:
        # BEGIN SOLUTION
        return conditional(x, z, w1, w2)
        # END SOLUTION


def export_conditional(
    x: torch.Tensor, z: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> torch.export.ExportedProgram:
    """`torch.export.export(Conditional(), (x, z, w1, w2))`: a static graph with both branches.

    The example inputs fix the shapes and dtypes; the value of z does not matter: the
    program (`program.module()(x, z, w1, w2)`) follows z at run time, and its graph holds
    one `torch.cond` node.
    """
    # BEGIN SOLUTION
    return torch.export.export(Conditional(), (x, z, w1, w2))
    # END SOLUTION


def trace_conditional(
    x: torch.Tensor, z: float, w1: torch.Tensor, w2: torch.Tensor
) -> torch.export.ExportedProgram:
    """Export `PythonConditional()` with z as a Python float: tracing freezes one branch.

    `torch.export.export(PythonConditional(), (x, float(z), w1, w2))`. The Python `if`
    runs once, on this z: the graph holds one matrix multiply (the branch taken) and no
    `torch.cond`, and the program raises when called with a different z.
    """
    # BEGIN SOLUTION
    return torch.export.export(PythonConditional(), (x, float(z), w1, w2))
    # END SOLUTION
