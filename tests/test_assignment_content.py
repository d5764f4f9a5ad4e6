"""The assignment's content holds together: stubs, reference, public tests, fixtures, notebook.

The public tests must pass on the reference and fail on the untouched stubs; the
committed fixtures must match what their generator produces (within tolerance) and the
notebook exactly; the notebook must run; and nothing shipped to students may contain reference code.
"""

from __future__ import annotations

import ast
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import nbformat
import pytest
import torch

from grader.authoring.fixtures import fixture_difference
from grader.authoring.validate import fixture_problems
from grader.course.manifest import load_assignment

COURSE_ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT_DIR = COURSE_ROOT / "assignments" / "pytorch_basics"
SOLUTIONS_DIR = COURSE_ROOT / "solutions" / "pytorch_basics"
PARTS = load_assignment("pytorch_basics").parts
PART_IDS = [part.id for part in PARTS]
PART_FILES = [part.file for part in PARTS]
PUBLIC_TESTS = ASSIGNMENT_DIR / "public_tests"
FIXTURES_DIR = ASSIGNMENT_DIR / "public_fixtures"
NOTEBOOK = ASSIGNMENT_DIR / "walkthrough.ipynb"
MAX_FIXTURE_BYTES = 200_000


def run_python(
    *args: str | Path,
    cwd: Path,
    extra_env: dict[str, str] | None = None,
    ok_exit_codes: tuple[int, ...] = (0,),
) -> str:
    """Run a Python script or module in a fresh interpreter; return its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    # Keep the checked-in folders free of __pycache__ and .pytest_cache.
    env.update(PYTHONDONTWRITEBYTECODE="1", **(extra_env or {}))
    process = subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert process.returncode in ok_exit_codes, (
        f"exit {process.returncode}\n{process.stdout}\n{process.stderr}"
    )
    return process.stdout


@dataclass(frozen=True)
class PublicRun:
    passed: list[str]
    failed: dict[str, str]  # test id -> failure or error message
    skipped: list[str]


def run_public_tests(student_dir: Path, tmp_path: Path) -> PublicRun:
    """Run the public tests on `student_dir` as a student would, from the assignment folder."""
    junit = tmp_path / "public.xml"
    run_python(
        "-m",
        "pytest",
        "public_tests",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        cwd=ASSIGNMENT_DIR,
        extra_env={"GRADER_STUDENT_DIR": str(student_dir)},
        ok_exit_codes=(0, 1),  # 1: some tests failed, which the caller inspects
    )
    passed, failed, skipped = [], {}, []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        problems = [case.find("failure"), case.find("error")]
        problem = next((p for p in problems if p is not None), None)
        if problem is not None:
            failed[test_id] = f"{problem.get('message', '')}\n{problem.text or ''}"
        elif case.find("skipped") is not None:
            skipped.append(test_id)
        else:
            passed.append(test_id)
    return PublicRun(passed, failed, skipped)


@pytest.mark.slow
def test_reference_passes_every_public_test(reference_copy: Path, tmp_path: Path) -> None:
    run = run_public_tests(reference_copy, tmp_path)
    assert not run.failed, "\n\n".join(f"{k}\n{v}" for k, v in run.failed.items())
    tested_parts = {test_id.split("::")[0].rsplit(".", 1)[-1] for test_id in run.passed}
    assert tested_parts == {f"test_{part_id}" for part_id in PART_IDS}


@pytest.mark.slow
def test_untouched_stubs_fail_every_public_test(stub_copy: Path, tmp_path: Path) -> None:
    run = run_public_tests(stub_copy, tmp_path)
    assert run.passed == []
    assert run.failed
    # Each failure must come from the stub itself, not from a broken test.
    not_stub_failures = {k: v for k, v in run.failed.items() if "NotImplementedError" not in v}
    assert not not_stub_failures, not_stub_failures


def test_every_public_test_has_points_and_a_one_line_docstring() -> None:
    for part_id in PART_IDS:
        path = PUBLIC_TESTS / f"test_{part_id}.py"
        tests = [
            node
            for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        ]
        assert tests, f"{path} has no tests"
        for test in tests:
            decorators = [ast.unparse(d) for d in test.decorator_list]
            assert any(d.startswith("pytest.mark.points(") for d in decorators), test.name
            docstring = ast.get_docstring(test)
            assert docstring and "\n" not in docstring, f"{path.name}::{test.name}"


@pytest.mark.slow
def test_recorded_fixtures_match_within_tolerance() -> None:
    """Within the grader's tolerances, not byte for byte: CPUs differ in the last bit."""
    assert fixture_problems(load_assignment("pytorch_basics")) == []
    assert sum(path.stat().st_size for path in FIXTURES_DIR.iterdir()) < MAX_FIXTURE_BYTES


def test_fixture_comparison_allows_an_ulp_and_names_a_real_difference() -> None:
    want = {"loss": [1.0, 2.0], "w": torch.ones(3, dtype=torch.float64)}
    ulp: dict[str, Any] = {
        "loss": [1.0, math.nextafter(2.0, 3.0)],
        "w": torch.ones(3, dtype=torch.float64),
    }
    ulp["w"][1] = math.nextafter(1.0, 2.0)
    assert fixture_difference(ulp, want, "f") == ""
    wrong = {"loss": [1.0, 2.0], "w": torch.tensor([1.0, 1.5, 1.0], dtype=torch.float64)}
    assert fixture_difference(wrong, want, "f").startswith("f['w']")


def test_notebook_has_one_marked_cell_per_part() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    marked: dict[str, list[str]] = {}
    for cell in notebook.cells:
        assert not cell.get("outputs"), "the committed notebook must hold no outputs"
        for tag in cell.metadata.get("tags", []):
            if tag.startswith("part:"):
                assert cell.cell_type == "code"
                marked.setdefault(tag.removeprefix("part:"), []).append(cell.source)
    assert sorted(marked) == sorted(PART_IDS)
    for part_id, sources in marked.items():
        assert len(sources) == 1, part_id
        lines = sources[0].splitlines()
        assert lines[0] == f"# part: {part_id}"
        assert lines[-1].startswith(f"from {part_id} import ")


def execute_notebook(folder: Path) -> None:
    """Run the walkthrough from top to bottom with `folder` as the working directory."""
    from nbclient import NotebookClient

    notebook = nbformat.read(folder / NOTEBOOK.name, as_version=4)
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(folder)}}
    )
    client.execute()


@pytest.mark.slow
def test_notebook_runs_on_the_reference(reference_copy: Path) -> None:
    shutil.copy(NOTEBOOK, reference_copy)
    execute_notebook(reference_copy)


@pytest.mark.slow
def test_notebook_stops_at_the_first_stub(stub_copy: Path) -> None:
    from nbclient.exceptions import CellExecutionError

    shutil.copy(NOTEBOOK, stub_copy)
    with pytest.raises(CellExecutionError) as error:
        execute_notebook(stub_copy)
    assert "NotImplementedError" in str(error.value)
    assert "forward_backward: not implemented yet" in str(error.value)


def function_bodies(tree: ast.AST) -> dict[str, str]:
    """Map the ast.dump of each function body (docstring left out) to the function's name."""
    bodies = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if ast.get_docstring(node) is not None:
                body = body[1:]
            if body:
                bodies[ast.dump(ast.Module(body=body, type_ignores=[]))] = node.name
    return bodies


def block_statements(tree: ast.AST) -> dict[str, str]:
    """Map the ast.dump of each loop, with-block and if-block to where it starts."""
    blocks = (ast.For, ast.While, ast.With, ast.If)
    return {
        ast.dump(node): f"line {node.lineno}" for node in ast.walk(tree) if isinstance(node, blocks)
    }


def student_facing_trees() -> dict[str, ast.Module]:
    """Every Python file under assignments/, and the walkthrough's code cells, parsed."""
    trees: dict[str, ast.Module] = {
        str(path.relative_to(COURSE_ROOT)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((COURSE_ROOT / "assignments").rglob("*.py"))
    }
    for path in sorted((COURSE_ROOT / "assignments").rglob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                # IPython magics are not Python; blank them out before parsing.
                lines = [
                    "" if line.lstrip().startswith("%") else line
                    for line in cell.source.splitlines()
                ]
                trees[f"{path.relative_to(COURSE_ROOT)} cell {index}"] = ast.parse("\n".join(lines))
    return trees


def test_no_reference_code_ships_to_students() -> None:
    reference_bodies: dict[str, str] = {}
    reference_blocks: dict[str, str] = {}
    for name in PART_FILES:
        tree = ast.parse((SOLUTIONS_DIR / name).read_text(encoding="utf-8"))
        reference_bodies |= {k: f"{name}:{v}" for k, v in function_bodies(tree).items()}
        reference_blocks |= {k: f"{name} {v}" for k, v in block_statements(tree).items()}
    leaks = []
    for where, tree in student_facing_trees().items():
        for body, function in function_bodies(tree).items():
            if body in reference_bodies:
                leaks.append(f"{where}: {function} has the body of {reference_bodies[body]}")
        for block, line in block_statements(tree).items():
            if block in reference_blocks:
                leaks.append(f"{where} {line}: a block of {reference_blocks[block]}")
    assert not leaks, "\n".join(leaks)
