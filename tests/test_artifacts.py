"""What a judge job accepts from an exported program's archive (grader/sandbox/artifacts.py):
every program torch.export writes, and none whose text torch.export.load would run."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch._export.serde import serialize

from grader.sandbox.artifacts import program_problem, safe_expression


class Choice(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, z: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
    ) -> torch.Tensor:
        chosen: torch.Tensor = torch.cond(
            z > 0, lambda x, a, b: x @ a, lambda x, a, b: x @ b, (x, w1, w2)
        )
        return chosen


class Traced(torch.nn.Module):
    def forward(self, x: torch.Tensor, z: float, w1: torch.Tensor) -> torch.Tensor:
        product: torch.Tensor = x @ w1 if z > 0 else -x @ w1
        return product


class Layered(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(13, 5)
        self.register_buffer("scale", torch.ones(5))

    def forward(self, inputs: dict[str, torch.Tensor], *, shift: float = 0.0) -> torch.Tensor:
        scaled: torch.Tensor = self.linear(inputs["x"]) * self.scale
        return scaled + inputs["x"].sum() + shift


def as_document(program: torch.export.ExportedProgram) -> dict[str, Any]:
    """The program as the deserializer receives it, in the archive's JSON form."""
    artifact = serialize.ExportedProgramSerializer().serialize(program)
    document: dict[str, Any] = json.loads(
        json.dumps(serialize._dataclass_to_dict(artifact.exported_program))
    )
    return document


def programs() -> dict[str, torch.export.ExportedProgram]:
    x, w1, w2 = torch.randn(7, 13), torch.randn(13, 5), torch.randn(13, 5)
    return {
        "cond": torch.export.export(Choice(), (x, torch.tensor(1.0), w1, w2)),
        "traced": torch.export.export(Traced(), (x, 2.0, w1)),
        "dynamic": torch.export.export(
            Choice(),
            (x, torch.tensor(1.0), w1, w2),
            dynamic_shapes={"x": {0: torch.export.Dim("n")}, "z": None, "w1": None, "w2": None},
        ),
        "parameters-dict-kwargs": torch.export.export(Layered(), ({"x": x},), {"shift": 1.0}),
    }


@pytest.mark.parametrize("kind", list(programs()))
def test_every_program_torch_export_writes_is_accepted(kind: str) -> None:
    assert program_problem(as_document(programs()[kind])) is None


def test_a_placeholder_name_that_is_python_is_refused() -> None:
    document = as_document(programs()["cond"])
    graph = document["graph_module"]["graph"]
    graph["inputs"][0]["as_tensor"]["name"] = "x = __import__('os').system('id')"
    problem = program_problem(document)
    assert problem is not None and "inputs/0/as_tensor/name" in problem


def test_a_shape_expression_that_runs_code_is_refused() -> None:
    document = as_document(programs()["dynamic"])
    sizes = document["graph_module"]["graph"]["tensor_values"]["x"]["sizes"]
    assert "Symbol(" in sizes[0]["as_expr"]["expr_str"]
    sizes[0]["as_expr"]["expr_str"] = "Integer(7) if exec('import os', globals()) is None else 0"
    assert "x/sizes/0/as_expr/expr_str" in str(program_problem(document))


def test_a_pytree_key_that_breaks_out_of_its_quotes_is_refused() -> None:
    document = as_document(programs()["parameters-dict-kwargs"])
    signature = document["graph_module"]["module_call_graph"][0]["signature"]
    signature["in_spec"] = signature["in_spec"].replace(
        '\\"shift\\"', "\\\"a':__import__('os')\\\""
    )
    assert "in_spec" in str(program_problem(document))


def test_a_line_break_in_metadata_is_refused() -> None:
    document = as_document(programs()["cond"])
    node = document["graph_module"]["graph"]["nodes"][0]
    node["metadata"]["stack_trace"] = 'File "a.py", line 1, in f\r__import__("os")'
    assert "control character" in str(program_problem(document))


@pytest.mark.parametrize(
    "text",
    [
        "Symbol('s77', positive=True, integer=True)",
        "2*s0 + 1",
        "Max(1, FloorDiv(s0, 2))",
        "Eq(Mod(s0, 4), 0) & (s0 >= 2)",
        "Piecewise((s0, s0 > 3), (3, True))",
    ],
)
def test_shape_expressions_torch_writes_are_safe(text: str) -> None:
    assert safe_expression(text)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('id')",
        "exec('x')",
        "Symbol('a b')",
        "s0.__class__",
        "Symbol(chr(95))",
        "sympify('1')",
        "[s0 for s0 in ()]",
        "lambda: 0",
        "s0(" * 40,
    ],
)
def test_shape_expressions_that_run_code_are_not(text: str) -> None:
    assert not safe_expression(text)
