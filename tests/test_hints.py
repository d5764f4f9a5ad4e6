"""Error hints: generic PyTorch causes (grader/grading/hints.py), an assignment's own manifest's."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from grader.course.manifest import load_assignment, parse_manifest
from grader.errors import ConfigError
from grader.grading.hints import Hint, error_hint, failing_functions, takes_device_argument

MANIFEST = "[assignment]\nid='a'\n[[parts]]\nid='p'\nfile='p.py'\npoints=1\n"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("a leaf Variable that requires grad is being used in an in-place operation.", "no_grad"),
        ("expected scalar type Double but found Float", "dtype=x.dtype"),
        ("mat1 and mat2 shapes cannot be multiplied (37x53 and 29x53)", "transpose"),
        ("'NoneType' object has no attribute 'zero_'", "None until the first backward()"),
        ("unsupported operand type(s) for *: 'float' and 'NoneType'", "None until the first"),
        ("can't convert cuda:0 device type tensor to numpy.", "stay in torch"),
    ],
)
def test_generic_pytorch_errors_get_a_hint(message: str, expected: str) -> None:
    assert expected in error_hint(message, "cpu")


def test_generic_hints_say_nothing_about_an_assignments_running_example() -> None:
    hint = error_hint("mat1 and mat2 shapes cannot be multiplied (37x53 and 29x53)", "cpu")
    assert "D_in" not in hint


def test_device_hint_names_the_device_argument_where_the_function_takes_one() -> None:
    message = "Torch not compiled with CUDA enabled"
    assert "x.device" in error_hint(message, "cpu")
    with_argument = error_hint(message, "cpu", takes_device=True)
    assert "the `device` argument" in with_argument
    assert "x.device" not in with_argument


def test_the_failing_function_is_read_from_the_students_frames() -> None:
    traceback = (
        'File "/sandbox/probes.py", line 3, in matmul_tflops\n'
        'File "/sandbox/submission/device_benchmark.py", line 12, in matmul_tflops\n'
        'File "/sandbox/submission/device_benchmark.py", line 4, in _helper\n'
    )
    assert failing_functions(traceback, "device_benchmark.py") == ["matmul_tflops", "_helper"]
    reference = types.ModuleType("reference")
    exec("def matmul_tflops(n, device, dtype=None): pass\ndef pick_device(): pass", vars(reference))
    assert takes_device_argument(reference, ["matmul_tflops"])
    assert not takes_device_argument(reference, ["pick_device", "missing"])


def test_assignment_hints_come_first_and_only_in_their_parts() -> None:
    own = (Hint(match=("shapes cannot",), text="x is (N, D_in)", parts=("p",)),)
    message = "shapes cannot be multiplied"
    assert error_hint(message, "cpu", part="p", assignment_hints=own) == "Hint: x is (N, D_in)"
    assert "D_in" not in error_hint(message, "cpu", part="q", assignment_hints=own)


def test_pytorch_basics_keeps_its_running_example_in_its_manifest() -> None:
    hints = load_assignment("pytorch_basics").hints
    assert any("w1 (D_in, H)" in hint.text for hint in hints)


def test_manifest_hints_are_parsed(tmp_path: Path) -> None:
    path = tmp_path / "a" / "assignment.toml"
    path.parent.mkdir()
    path.write_text(MANIFEST + "[[hints]]\nmatch=['boom']\ntext='defuse'\nparts=['p']\n")
    assert parse_manifest(path).hints == (Hint(match=("boom",), text="defuse", parts=("p",)),)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("match=['boom']\n", "needs text"),
        ("text='t'\n", "needs text"),
        ("match='boom'\ntext='t'\n", "needs text"),
        ("match=['boom']\ntext='t'\nparts=['nope']\n", "unknown parts"),
    ],
)
def test_bad_manifest_hints_name_the_problem(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "a" / "assignment.toml"
    path.parent.mkdir()
    path.write_text(MANIFEST + "[[hints]]\n" + entry)
    with pytest.raises(ConfigError, match=message):
        parse_manifest(path)
