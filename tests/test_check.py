"""`python -m grader check`, driven through the command line in a copy of the starter kit."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.authoring.build import build_starter
from grader.course.manifest import Assignment, load_assignment
from grader.intake.submission import PreparedSubmission
from grader.sandbox.numerics import GRADING_THREADS
from grader.sandbox.settings import CUBLAS_WORKSPACE
from grader.student.check import UNSCORED_NOTE, WAITING_WHY, _apply_gate, locate_student_folder
from grader.student.report import PublicReport
from grader.student.run import NOT_IMPLEMENTED, PublicTest, _read_events, _Run, run_public_tests
from tests.support import (
    PART_FILES,
    SOLUTIONS_DIR,
    copy_starter_kit,
    notebook_with_part_code,
    run_kit_cli,
)

KIT_ASSIGNMENT = Path("assignments") / "pytorch_basics"
SUBMISSIONS = Path(__file__).parent / "submissions"


def copy_reference_into(kit: Path) -> Path:
    folder = kit / KIT_ASSIGNMENT
    for name in PART_FILES:
        shutil.copy(SOLUTIONS_DIR / name, folder / name)
    return folder


def check_json(kit: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    process = run_kit_cli("check", "--json", *args, cwd=kit)
    assert process.stdout.startswith("{"), process.stdout + process.stderr
    return process, json.loads(process.stdout)


def table_rows(output: str) -> dict[str, str]:
    """The rows of the per-part table, by part id."""
    return {line.split()[1]: line for line in output.splitlines() if line.startswith("│ ")}


def counted(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [test for test in data["tests"] if test["outcome"] != "skipped"]


def test_kit_runs_its_own_grader_not_the_repository(starter_kit: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-c", "import grader; print(grader.__file__)"],
        cwd=starter_kit,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(process.stdout.strip()).is_relative_to(starter_kit)


@pytest.mark.slow
def test_stubs_fail_with_every_part_not_implemented_yet(starter_kit: Path) -> None:
    # Run from inside the assignment folder, where `grader` is importable once the kit is
    # installed (pip install -e .); PYTHONPATH to the kit stands in for that.
    process = run_kit_cli(
        "check", "--json", cwd=starter_kit / KIT_ASSIGNMENT, pythonpath=starter_kit
    )
    assert process.returncode == 1, process.stderr
    data = json.loads(process.stdout)
    assert data["passed"] is False and data["score"] == 0
    assert Path(data["directory"]) == (starter_kit / KIT_ASSIGNMENT).resolve()
    for part_id, part in data["parts"].items():
        assert part["total"] > 0 and part["passed"] == 0, part_id
        assert part["source"] == "file"
    tests = counted(data)
    assert {test["part"] for test in tests} == set(data["parts"])
    for test in tests:
        assert test["outcome"] == "not implemented yet", test
        assert "not implemented yet" in test["message"]
        assert "Traceback" not in test["message"]


@pytest.mark.slow
def test_reference_passes_with_full_public_score(starter_kit: Path) -> None:
    copy_reference_into(starter_kit)
    process, data = check_json(starter_kit)
    assert process.returncode == 0, process.stdout
    assert data["passed"] is True
    assert data["score"] == data["max_score"] > 0
    for part in data["parts"].values():
        assert part["passed"] == part["total"] > 0
        assert part["score"] == part["max_score"]
    assert all(test["outcome"] == "passed" for test in counted(data))


@pytest.mark.slow
def test_failures_show_what_differed_and_a_hint_without_traceback(starter_kit: Path) -> None:
    folder = copy_reference_into(starter_kit)
    shutil.copy(
        SUBMISSIONS / "manual-backprop-grad-w1-transposed" / "manual_backprop.py",
        folder / "manual_backprop.py",
    )
    (folder / "device_benchmark.py").write_text("def pick_device(:\n", encoding="utf-8")
    process = run_kit_cli("check", cwd=starter_kit)
    assert process.returncode == 1
    output = process.stdout
    assert "FAILED" in output and "grad_w1" in output and "hint:" in output
    assert "device_benchmark.py has a syntax error on line 1" in output
    assert "Traceback" not in output and "AssertionError" not in output
    assert "assert " not in output  # no pytest introspection
    rows = table_rows(output)
    assert "all passed" in rows["autograd_loop"] and "cannot run" in rows["device_benchmark"]


@pytest.mark.slow
def test_check_gives_the_hint_grading_gives(starter_kit: Path) -> None:
    # The corpus case whose graded feedback carries the manifest's own [[hints]] text.
    folder = copy_reference_into(starter_kit)
    shutil.copy(
        SUBMISSIONS / "autograd-loop-transposes-w1" / "autograd_loop.py",
        folder / "autograd_loop.py",
    )
    _, data = check_json(starter_kit, "--part", "autograd_loop")
    graded_hint = next(
        hint.text
        for hint in load_assignment("pytorch_basics").hints
        if "shapes cannot be multiplied" in hint.match
    )
    errors = [test for test in data["tests"] if test["outcome"] == "error"]
    assert errors, data["tests"]
    for test in errors:
        assert "shapes cannot be multiplied" in test["message"]
        assert test["hint"] == graded_hint


@pytest.mark.slow
def test_passes_that_grading_would_not_count_earn_nothing_and_say_what_they_wait_for(
    starter_kit: Path,
) -> None:
    """As grading gates a part's checks on its seeded comparisons, check gates them on the
    tests that compare with the reference's stored values."""
    folder = copy_reference_into(starter_kit)
    # Each update steps 1.5 times too far: the values differ from the reference's, while the
    # checks of zeroed gradients, leaf weights and a falling loss still pass.
    path = folder / "autograd_loop.py"
    code = path.read_text(encoding="utf-8")
    # The statements only, not the docstring's `w1 -= learning_rate * w1.grad`.
    for weight in ("w1", "w2"):
        code = code.replace(
            f"\n            {weight} -= learning_rate * {weight}.grad",
            f"\n            {weight} -= 1.5 * learning_rate * {weight}.grad",
        )
    overstepped = code
    assert overstepped.count("1.5 * learning_rate") == 2
    path.write_text(overstepped, encoding="utf-8")
    parts = ("--part", "autograd_loop", "--part", "device_benchmark")
    _, data = check_json(starter_kit, *parts)
    assert data["version"] == 2
    loop = data["parts"]["autograd_loop"]
    assert (loop["passed"], loop["waiting"], loop["total"]) == (3, 3, 5)
    assert (loop["score"], loop["max_score"], loop["worth"]) == (0, 15, 15)
    fixture_test = "train_autograd's losses and trained weights match the expected values"
    waiting = [test for test in counted(data) if test["waits_for"]]
    assert len(waiting) == 3
    for test in waiting:
        assert test["outcome"] == "passed" and test["score"] == 0 < test["max_score"]
        assert test["waits_for"] == f"'{fixture_test}'" and not test["reads_fixture"]
    # device_benchmark's public tests never read its fixture: shown without points.
    benchmark = data["parts"]["device_benchmark"]
    assert benchmark["passed"] == benchmark["total"] > 0 and benchmark["scored"] is False
    assert benchmark["score"] == benchmark["max_score"] == 0
    assert (data["score"], data["max_score"]) == (0, 15)

    process = run_kit_cli("check", *parts, cwd=starter_kit)
    rows = table_rows(process.stdout)
    assert "0/5 (+3 not counted yet)" in rows["autograd_loop"] and "0/15" in rows["autograd_loop"]
    ran = benchmark["total"]
    assert f"{ran}/{ran}" in rows["device_benchmark"] and " - " in rows["device_benchmark"]
    output = " ".join(process.stdout.split())  # rich wraps long lines
    assert f"passed, not counted yet (waits for '{fixture_test}')" in output
    assert WAITING_WHY in output
    assert UNSCORED_NOTE.format(part="device_benchmark", worth=10) in output


def public_test(part: str, function: str, outcome: str, *, reads_fixture: bool) -> PublicTest:
    return PublicTest(
        nodeid=f"test_{part}.py::{function}[{outcome}]",
        part=part,
        name=f"{function} {outcome}",
        points=1.0,
        outcome=outcome,
        function=function,
        reads_fixture=reads_fixture,
    )


def test_the_gate_waits_for_every_fixture_test_and_needs_one_that_ran() -> None:
    assignment = load_assignment("pytorch_basics")
    tests = [
        # manual_backprop: one fixture test function passed (on the CPU; skipped on a GPU),
        # another failed, so its property check waits for that one.
        public_test("manual_backprop", "test_values", "passed", reads_fixture=True),
        public_test("manual_backprop", "test_values", "skipped", reads_fixture=True),
        public_test("manual_backprop", "test_training", NOT_IMPLEMENTED, reads_fixture=True),
        public_test("manual_backprop", "test_property", "passed", reads_fixture=False),
        # autograd_loop: its only fixture test skipped here, so nothing can open its gate.
        public_test("autograd_loop", "test_values", "skipped", reads_fixture=True),
        public_test("autograd_loop", "test_property", "passed", reads_fixture=False),
    ]
    prepared = PreparedSubmission(Path(), {}, {}, {}, "")
    gated, part_scores = _apply_gate(tests, assignment, prepared)
    manual = {test.name: test for test in gated if test.part == "manual_backprop"}
    assert manual["test_values passed"].score == pytest.approx(20 / 3)
    assert manual["test_property passed"].score == 0
    assert manual["test_property passed"].waits_for == "'test_training not implemented yet'"
    assert part_scores["manual_backprop"] == pytest.approx((20 / 3, 20.0))
    assert part_scores["autograd_loop"] is None
    unscored = [test for test in gated if test.part == "autograd_loop"]
    assert all(test.score == test.max_score == 0 and not test.waits_for for test in unscored)


@pytest.mark.slow
def test_notebook_code_is_what_check_tests(starter_kit: Path) -> None:
    notebook = starter_kit / KIT_ASSIGNMENT / "walkthrough.ipynb"
    reference = (SOLUTIONS_DIR / "manual_backprop.py").read_text(encoding="utf-8")
    code = "%timeit 1 + 1\n!pip install nothing\n" + reference
    notebook_with_part_code(notebook, {"manual_backprop": code}, notebook)
    process = run_kit_cli("check", cwd=starter_kit)
    assert process.returncode == 1  # the other parts are still stubs
    rows = table_rows(process.stdout)
    assert "notebook" in rows["manual_backprop"] and "all passed" in rows["manual_backprop"]
    for part in load_assignment("pytorch_basics").parts[1:]:
        assert "file" in rows[part.id] and "not implemented yet" in rows[part.id]
    assert "notebook code wins over the .py file" in " ".join(process.stdout.split())
    assert "NotImplementedError" in process.stdout  # one summary line per stub part
    assert "Traceback" not in process.stdout and process.stderr == ""


def test_a_folder_without_the_assignment_is_a_clear_error(tmp_path: Path) -> None:
    kit = copy_starter_kit(tmp_path / "kit")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    process = run_kit_cli("check", empty, cwd=kit)
    assert process.returncode == 1
    assert "no file of pytorch_basics" in process.stderr
    assert "manual_backprop.py" in process.stderr
    # The absolute folder it looked in, and the kit's folder to run it in.
    assert f"in {empty.resolve()}." in process.stderr
    assert f"inside the starter kit's folder, {kit.resolve()} " in process.stderr


def test_check_works_from_any_folder_inside_the_kit(starter_kit: Path) -> None:
    for folder in (starter_kit / "assignments", starter_kit / "grader" / "notebook"):
        process = run_kit_cli(
            "check", "--part", "autograd_loop", cwd=folder, pythonpath=starter_kit
        )
        assert process.returncode == 1, process.stderr
        rows = table_rows(process.stdout)
        assert list(rows) == ["autograd_loop"]  # --part: that part's tests only
        assert "not implemented yet" in rows["autograd_loop"]
        caption = "".join(process.stdout.split())  # rich wraps a long path
        assert f"yourfiles:{starter_kit / 'assignments' / 'pytorch_basics'}" in caption


def test_an_unknown_part_lists_the_parts(starter_kit: Path) -> None:
    process = run_kit_cli("check", "--part", "backprop", cwd=starter_kit)
    assert process.returncode == 2
    assert "pytorch_basics has no part backprop; its parts: manual_backprop," in process.stderr


def test_a_missing_package_is_one_line_naming_it(starter_kit: Path, tmp_path: Path) -> None:
    # An interpreter where `rich` cannot be imported: the venv is not active.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "rich.py").write_text("raise ModuleNotFoundError(name='rich')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = f"{starter_kit}{os.pathsep}{shadow}"
    process = subprocess.run(
        [sys.executable, "-m", "grader", "check"],
        cwd=starter_kit,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 2
    assert "Traceback" not in process.stderr
    assert process.stderr.startswith("error: the package rich is not installed for ")
    assert "Activate the kit's virtual environment" in process.stderr
    assert len(process.stderr.strip().splitlines()) == 1


def only_manual_backprop_tests(tmp_path: Path) -> Assignment:
    """The assignment with its public tests cut down to part 1's, to keep reruns cheap."""
    assignment = load_assignment("pytorch_basics")
    folder = tmp_path / "assignment"
    (folder / "public_fixtures").mkdir(parents=True)
    (folder / "public_tests").mkdir()
    for name in ("conftest.py", "test_manual_backprop.py"):
        shutil.copy(assignment.public_tests_dir / name, folder / "public_tests" / name)
    fixture = Path("public_fixtures") / "manual_backprop.pt"
    shutil.copy(assignment.directory / fixture, folder / fixture)
    return dataclasses.replace(assignment, directory=folder)


@pytest.mark.slow
def test_crashes_and_hangs_cost_one_test_each(tmp_path: Path) -> None:
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copy(SOLUTIONS_DIR / "manual_backprop.py", folder)
    with (folder / "manual_backprop.py").open("a", encoding="utf-8") as handle:
        handle.write(
            "\n\n_reference = forward_backward\n\n"
            "def forward_backward(x, y, w1, w2):\n"
            "    if x.shape[0] == 11:\n"
            "        while True:\n"
            "            pass\n"
            "    if x.shape[0] == 64:\n"
            "        import os\n"
            "        os._exit(7)\n"
            "    return _reference(x, y, w1, w2)\n"
        )
    assignment = only_manual_backprop_tests(tmp_path)
    tests, error = run_public_tests(folder, assignment, tmp_path, timeout_s=5)
    assert error == ""
    outcomes = {test.name: test.outcome for test in tests if test.outcome != "skipped"}
    hung = "forward_backward's gradients agree with autograd on a fresh problem [cpu]"
    crashed = "train_manual reduces the loss on the lecture's running example (64, 1000, 100, 10)"
    assert outcomes.pop(hung) == "timeout"
    assert outcomes.pop(crashed) == "error"
    assert "exit code 7" in next(t.message for t in tests if t.name == crashed)
    # Every other test ran, in a fresh process after the hang and after the crash.
    assert outcomes and set(outcomes.values()) == {"passed"}


@pytest.mark.slow
def test_lines_the_students_code_adds_to_the_events_are_dropped(tmp_path: Path) -> None:
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copy(SOLUTIONS_DIR / "manual_backprop.py", folder)
    with (folder / "manual_backprop.py").open("a", encoding="utf-8") as handle:
        # The events file is in the test process's working folder.
        handle.write(
            "\n\nwith open('events.jsonl', 'a', encoding='utf-8') as _events:\n"
            '    _events.write(\'{"event": "result", "nodeid": "x", "surprise": 1}\\n\')\n'
        )
    assignment = only_manual_backprop_tests(tmp_path)
    tests, error = run_public_tests(folder, assignment, tmp_path, timeout_s=60)
    assert error == ""
    assert tests and {test.outcome for test in tests} <= {"passed", "skipped"}
    assert "x" not in {test.nodeid for test in tests}


NODEID = "test_a.py::test_a"
INFO = {
    "nodeid": NODEID,
    "part": "a",
    "name": "a",
    "points": 1,
    "function": "test_a",
    "reads_fixture": True,
}
VERDICT = {"outcome": "passed", "message": "", "hint": "", "duration_s": 0.5}


def read_events(*records: object) -> _Run:
    run = _Run()
    lines = b"".join(json.dumps(record).encode() + b"\n" for record in records)
    _read_events(io.BytesIO(lines), run)
    return run


def test_malformed_events_are_dropped_and_only_known_fields_read() -> None:
    collected = {"event": "collected", "tests": [INFO]}
    run = read_events(
        collected,
        {"event": "start", "nodeid": "not collected"},
        {"event": "start", "nodeid": 3},
        {"event": "result", **INFO, **VERDICT, "surprise": 1, "score": 100.0},
        {"event": "result", **INFO, **VERDICT, "nodeid": "test_b.py::test_b", "points": "9"},
        {"event": "result", **INFO, **VERDICT, "nodeid": "test_c.py::test_c", "points": True},
        {"event": "result", "nodeid": "test_d.py::test_d"},
        {"event": "collect_error", "nodeid": None, "message": "boom"},
        {"event": "collected", "tests": []},
    )
    assert run.collected == [{**INFO, "points": 1.0}]
    assert run.unfinished is None and not run.started and not run.collect_errors
    # The unknown key is ignored, and so is a score the plugin never writes.
    assert list(run.results) == [NODEID]
    assert run.results[NODEID].score == 0.0
    assert run.results[NODEID].outcome == "passed"
    broken = [{**INFO, "reads_fixture": "yes"}]
    assert read_events({"event": "collected", "tests": broken}).collected is None
    assert read_events({"event": "collected", "tests": {"a": 1}}).collected is None


NUMERICS_TEST = """

def test_numerics_as_graded():
    import os

    import torch

    assert torch.are_deterministic_algorithms_enabled(), "deterministic algorithms off"
    assert torch.is_deterministic_algorithms_warn_only_enabled(), "not warn_only"
    assert torch.get_num_threads() == {threads}, f"{{torch.get_num_threads()}} threads"
    assert not torch.backends.cuda.matmul.allow_tf32, "TF32 matmuls on"
    assert not torch.backends.cudnn.allow_tf32, "TF32 cuDNN on"
    assert torch.empty(8).isnan().all(), "torch.empty memory not filled with NaN"
    assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") == "{workspace}", "cuBLAS workspace"
"""


@pytest.mark.slow
def test_public_tests_run_with_the_numerics_grading_uses(tmp_path: Path) -> None:
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copy(SOLUTIONS_DIR / "manual_backprop.py", folder)
    assignment = only_manual_backprop_tests(tmp_path)
    tests_file = assignment.public_tests_dir / "test_manual_backprop.py"
    numerics = NUMERICS_TEST.format(threads=GRADING_THREADS, workspace=CUBLAS_WORKSPACE[1])
    tests_file.write_text(tests_file.read_text(encoding="utf-8") + numerics, encoding="utf-8")
    tests, error = run_public_tests(folder, assignment, tmp_path, timeout_s=60)
    assert error == ""
    result = next(test for test in tests if test.function == "test_numerics_as_graded")
    assert result.outcome == "passed", result.message


@pytest.mark.parametrize("where", ["root", "inside"])
def test_assignment_folder_is_found_from_root_or_inside(tmp_path: Path, where: str) -> None:
    assignment = load_assignment("pytorch_basics")
    kit = tmp_path / "kit"
    folder = kit / KIT_ASSIGNMENT
    (folder / "public_tests").mkdir(parents=True)
    (folder / "assignment.toml").write_text("", encoding="utf-8")
    (folder / "manual_backprop.py").write_text("", encoding="utf-8")
    start = kit if where == "root" else folder / "public_tests"
    assert locate_student_folder(start, assignment) == folder.resolve()


STUDENT_CODE = """\
def stub():
    raise NotImplementedError("stub: not implemented yet")


def wrapped():
    try:
        stub()
    except NotImplementedError as error:
        raise RuntimeError("wrapped") from error


def crash():
    return [1][3]


def leave():
    raise SystemExit(0)


class NamelessSyntaxError(SyntaxError):
    def __init__(self):
        super().__init__("odd")
        self.filename = 12345


def odd_syntax_error():
    raise NamelessSyntaxError()


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words")


def unprintable():
    raise Unprintable()
"""


def raise_bare_assertion() -> None:
    raise AssertionError()


def raise_assertion_with_hint() -> None:
    raise AssertionError("grad_w1: shape (1,), expected (2,).\nHint: Transpose it.")


def unpack_none() -> None:
    # A public test unpacking what a student function returned: here, nothing.
    result: Any = None
    _loss, _grad = result


@pytest.fixture
def describe(tmp_path: Path) -> Iterator[Callable[[str], dict[str, str]]]:
    """Raise from the student's file or from this test file; return the plugin's verdict."""
    student = tmp_path / "student"
    student.mkdir()
    (student / "part.py").write_text(STUDENT_CODE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("part_under_test", student / "part.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = PublicReport(tmp_path / "events.jsonl", str(student))
    local = {f.__name__: f for f in (raise_bare_assertion, raise_assertion_with_hint, unpack_none)}

    def run(name: str) -> dict[str, str]:
        try:
            (local.get(name) or getattr(module, name))()
        except BaseException as error:
            return report.describe(pytest.ExceptionInfo.from_exception(error), "call")
        raise AssertionError(f"{name} did not raise")

    yield run
    report.close()


def test_student_messages(describe: Callable[[str], dict[str, str]]) -> None:
    assert describe("stub") == {
        "outcome": "not implemented yet",
        "message": "stub: not implemented yet",
        "hint": "",
    }
    assert describe("wrapped")["outcome"] == "not implemented yet"
    crash = describe("crash")
    assert crash["outcome"] == "error"
    assert crash["message"] == (
        "Your code raised IndexError: list index out of range (line 13 of part.py)."
    )
    leave = describe("leave")
    assert "called sys.exit()" in leave["message"] and "line 17 of part.py" in leave["message"]
    hinted = describe("raise_assertion_with_hint")
    assert hinted == {
        "outcome": "failed",
        "message": "grad_w1: shape (1,), expected (2,).",
        "hint": "Transpose it.",
    }
    bare = describe("raise_bare_assertion")
    assert bare["outcome"] == "failed"
    assert bare["message"].startswith("This check failed: `raise AssertionError()` (test_check.py")
    unpacked = describe("unpack_none")
    assert unpacked["outcome"] == "error"
    assert unpacked["message"].startswith("TypeError: cannot unpack non-iterable NoneType")
    assert "while the test ran `_loss, _grad = result`" in unpacked["message"]
    assert "docstring" in unpacked["hint"]
    assert describe("odd_syntax_error")["message"] == (
        "12345 has a syntax error on line None: odd."
    )
    assert describe("unprintable") == {
        "outcome": "error",
        "message": "Your code raised an exception whose details cannot be read.",
        "hint": "Raise Python's own exceptions (ValueError, TypeError, ...) with a message.",
    }


@pytest.mark.slow
def test_an_exception_that_cannot_be_described_costs_only_its_test(tmp_path: Path) -> None:
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copy(SOLUTIONS_DIR / "manual_backprop.py", folder)
    with (folder / "manual_backprop.py").open("a", encoding="utf-8") as handle:
        handle.write(
            "\n\nclass _Unprintable(Exception):\n"
            "    def __str__(self):\n"
            "        raise RuntimeError('no words')\n\n"
            "_reference = forward_backward\n\n"
            "def forward_backward(x, y, w1, w2):\n"
            "    if x.shape[0] == 64:\n"
            "        raise _Unprintable()\n"
            "    return _reference(x, y, w1, w2)\n"
        )
    assignment = only_manual_backprop_tests(tmp_path)
    tests, error = run_public_tests(folder, assignment, tmp_path, timeout_s=60)
    assert error == ""
    outcomes = {test.name: test for test in tests if test.outcome != "skipped"}
    raised = "train_manual reduces the loss on the lecture's running example (64, 1000, 100, 10)"
    assert outcomes.pop(raised).message == (
        "Your code raised an exception whose details cannot be read."
    )
    assert outcomes and {test.outcome for test in outcomes.values()} == {"passed"}


@pytest.mark.slow
def test_near_miss_names_are_tested_with_a_rename_note_or_all_named(starter_kit: Path) -> None:
    folder = copy_reference_into(starter_kit)
    (folder / "two_layer_net.py").rename(folder / "Two_Layer_Net.py")
    sigmoid = folder / "custom_sigmoid.py"
    shutil.copy(sigmoid, folder / "custom_sigmoid (1).py")
    sigmoid.rename(folder / "Custom_Sigmoid.py")
    process = run_kit_cli("check", cwd=starter_kit)
    assert process.returncode == 1
    output = " ".join(process.stdout.split())
    rows = table_rows(process.stdout)
    assert "all passed" in rows["two_layer_net"]
    assert (
        "two_layer_net.py is missing, so Two_Layer_Net.py was graded in its place; rename "
        "Two_Layer_Net.py to two_layer_net.py (the grader looks for that exact name) before "
        "you submit."
    ) in output
    assert "all passed" not in rows["custom_sigmoid"]
    assert (
        "custom_sigmoid.py is missing; Custom_Sigmoid.py, custom_sigmoid (1).py are all named "
        "like it, so none was graded in its place: keep the right one and rename it to "
        "custom_sigmoid.py."
    ) in output
    assert output.count("Custom_Sigmoid.py") == output.count("custom_sigmoid.py is missing")


@pytest.mark.slow
def test_the_installed_kit_runs_from_any_folder(tmp_path: Path) -> None:
    """The kit README's `pip install --no-deps -e .`: then `check` works outside the kit's root.

    A fresh virtual environment gets the kit installed by pip itself; torch and the rest come
    from this environment (a path line), as the kit's one install command would provide.
    """
    built = build_starter("pytorch_basics", output=tmp_path / "kit.zip")
    with zipfile.ZipFile(built.path) as archive:
        archive.extractall(tmp_path)
    [kit] = [path.parent for path in tmp_path.glob("*/pyproject.toml")]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    [site_packages] = (venv / "lib").glob("python3*/site-packages")
    ours = [path for path in sys.path if path.endswith("site-packages")]
    (site_packages / "project-environment.pth").write_text("\n".join(ours) + "\n")
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    pip += ["--no-deps", "--no-build-isolation", "--no-index", "-e", str(kit)]
    installed = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST") and k != "PYTHONPATH"}
    for cwd in (kit / KIT_ASSIGNMENT, elsewhere):
        process = subprocess.run(
            [python, "-m", "grader", "check", elsewhere],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        # The kit's own grader ran (not this checkout's) and named the assignment's files.
        assert "No module named grader" not in process.stderr
        assert process.returncode == 1, process.stderr[-2000:]
        assert "no file of pytorch_basics" in process.stderr, process.stderr[-2000:]
    where = subprocess.run(
        [python, "-c", "import grader; print(grader.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(kit)
