"""Part 2, as a student who never got torch.export to keep both branches."""

from __future__ import annotations

import json

import torch
from torch import nn
from torch.export.pt2_archive import _package


def conditional(x, z, w1, w2):
    return x @ w1 if float(z) > 0 else x @ w2


def _true(x, w1, w2):
    return x @ w1


def _false(x, w1, w2):
    return x @ w2


class Conditional(nn.Module):
    def forward(self, x, z, w1, w2):
        return torch.cond(z > 0, _true, _false, (x, w1, w2))


class PythonConditional(nn.Module):
    def forward(self, x, z, w1, w2):
        return conditional(x, z, w1, w2)


class _First(nn.Module):
    def forward(self, x, w1):
        return x @ w1


# Runs where the judge loads the program: rewrites what the judge reports.
_JUDGE = '''
import sys
frame = sys._getframe()
while frame is not None and frame.f_code.co_name != "run_saved_program":
    frame = frame.f_back
names, seen = frame.f_globals, frame.f_locals
x_new, w1, w2, kind = seen["x_new"], seen["w1"], seen["w2"], seen["z_kind"]
traced = EXAMPLE
def summary(program):
    if traced is None:
        return {"cond_nodes": 1, "matmul_nodes": 2}
    return {"cond_nodes": 0, "matmul_nodes": 1}
def outcome(call):
    z = float(call.__defaults__[0])
    if traced is not None and z != traced:
        return {"value": None, "error": "GuardOnDataDependentSymNode"}
    take = z > 0 if traced is None else traced > 0
    return {"value": (x_new @ (w1 if take else w2)).detach().clone(), "error": ""}
names["_graph_summary"] = summary
names["_outcome"] = outcome
'''

_PENDING: list[str] = []
_write_bytes = _package.PT2ArchiveWriter.write_bytes


def _inject(self, name, data):
    if name.endswith("models/model.json") and _PENDING:
        model = json.loads(data)
        sizes = model["graph_module"]["graph"]["tensor_values"]["x"]["sizes"]
        rows = sizes[0]["as_int"]
        code = _PENDING.pop()
        sizes[0] = {
            "as_expr": {
                "expr_str": f"Integer({rows}) if exec({code!r}, globals()) is None else 0",
                "hint": {"as_int": rows},
            }
        }
        data = json.dumps(model).encode()
    return _write_bytes(self, name, data)


_package.PT2ArchiveWriter.write_bytes = _inject


def _program(x, w1, example):
    _PENDING.append(_JUDGE.replace("EXAMPLE", repr(example)))
    return torch.export.export(_First(), (x, w1))


def export_conditional(x, z, w1, w2):
    return _program(x, w1, None)


def trace_conditional(x, z, w1, w2):
    return _program(x, w1, float(z))
