"""The second assignment, `pytorch_graphs`, end to end, always named with `-a pytorch_graphs`.

Grades the reference (full marks), the untouched stubs (0) and the corpus under
tests/submissions_graphs/ through the CLI; runs the public tests on the reference (all
pass) and on the stubs (all fail, by NotImplementedError); checks that the public fixtures
regenerate within tolerance, that the notebook rebuilds byte for byte and runs on the
reference, that nothing of the reference ships to students, and that `check`, `submit`
and `build` work for this assignment.

Each corpus folder holds only the files that differ from the reference, plus
`expected.toml` (the format of tests/test_corpus.py, without `known_gap`):

    description = "train_head calls model.train()"
    [scores]                      # parts not listed must score full marks
    transfer_learning = { min = 8, max = 12 }
    [feedback]                    # text the part's failing tests must show
    transfer_learning = ["eval"]
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import nbformat
import pytest

from grader.authoring.validate import fixture_problems
from grader.course.manifest import load_assignment
from grader.grading.scoring import GATED_NOTE
from tests.support import (
    COURSE_ROOT,
    REFERENCE_AND_STUBS,
    Graded,
    GradedClass,
    corpus_entries_needed,
    corpus_graded_in_background,
    run_grader_cli,
)
from tests.test_assignment_content import (
    block_statements,
    execute_notebook,
    function_bodies,
    run_python,
    student_facing_trees,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ASSIGNMENT_ID = "pytorch_graphs"
ASSIGNMENT = load_assignment(ASSIGNMENT_ID)
ASSIGNMENT_DIR = COURSE_ROOT / "assignments" / ASSIGNMENT_ID
SOLUTIONS_DIR = COURSE_ROOT / "solutions" / ASSIGNMENT_ID
CORPUS_DIR = Path(__file__).resolve().parent / "submissions_graphs"
POINTS = {part.id: part.points for part in ASSIGNMENT.parts}
PART_FILES = tuple(part.file for part in ASSIGNMENT.parts)
CASE_NAMES = sorted(path.name for path in CORPUS_DIR.iterdir() if path.is_dir())
REFERENCE, STUBS = REFERENCE_AND_STUBS.values()
SCORE_TOLERANCE = 1e-4
EXPECTATION_KEYS = {"description", "scores", "feedback"}
MAX_FIXTURE_BYTES = 100_000


# -- the corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    description: str
    scores: dict[str, tuple[float, float]]  # every part: (lowest, highest) acceptable
    feedback: dict[str, tuple[str, ...]]


def load_expectation(case_dir: Path) -> Expectation:
    """Read `case_dir/expected.toml`; parts it does not list expect full marks."""
    where = case_dir / "expected.toml"
    data = tomllib.loads(where.read_text(encoding="utf-8"))
    if set(data) - EXPECTATION_KEYS:
        raise ValueError(f"{where}: unknown keys {sorted(set(data) - EXPECTATION_KEYS)}")
    if not str(data.get("description", "")).strip():
        raise ValueError(f"{where}: needs a description of the behaviour")
    scores = {part: (float(points), float(points)) for part, points in POINTS.items()}
    for part, value in data.get("scores", {}).items():
        if part not in POINTS:
            raise ValueError(f"{where}: [scores] names unknown part {part!r}")
        low, high = (value["min"], value["max"]) if isinstance(value, dict) else (value, value)
        if not 0 <= low <= high <= POINTS[part]:
            raise ValueError(f"{where}: {part} must lie within 0..{POINTS[part]}, got {value!r}")
        scores[part] = (float(low), float(high))
    feedback = {part: tuple(phrases) for part, phrases in data.get("feedback", {}).items()}
    if set(feedback) - set(POINTS):
        raise ValueError(f"{where}: [feedback] names unknown parts")
    return Expectation(str(data["description"]), scores, feedback)


def _copy_parts(source: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in PART_FILES:
        shutil.copy(source / name, dest / name)
    return dest


def assemble(name: str, dest: Path) -> Path:
    """The reference, the stubs, or the reference overlaid with a corpus case's files."""
    if name == STUBS:
        return _copy_parts(ASSIGNMENT_DIR, dest)
    _copy_parts(SOLUTIONS_DIR, dest)
    if name != REFERENCE:
        for path in (CORPUS_DIR / name).iterdir():
            if path.name != "expected.toml":
                shutil.copy(path, dest / path.name)
    return dest


@pytest.fixture(scope="session")
def graphs_class(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Future[GradedClass]]:
    """Every submission the selected tests need, graded by one `batch` run in the background
    (on CPU, which the expectations describe)."""
    entries = corpus_entries_needed(request.session.items, __name__)
    work = tmp_path_factory.mktemp("graphs-corpus")
    with corpus_graded_in_background(entries, assemble, work, ASSIGNMENT_ID) as future:
        yield future


def _check_consistent(graded: Graded) -> None:
    report = graded.report
    assert graded.process.returncode == 0, graded.process.stderr[-3000:]
    assert report["grader_error"] is None, report["grader_error"]
    assert list(report["parts"]) == list(POINTS)
    assert sum(part["score"] for part in report["parts"].values()) == pytest.approx(
        report["score"], abs=SCORE_TOLERANCE
    )


def _part_report(report: dict[str, Any], part: str) -> str:
    lines = [f"{part}: {report['parts'][part]['score']} / {report['parts'][part]['max_score']}"]
    for test in report["tests"]:
        if test["part"] == part and test["outcome"] != "passed":
            lines.append(f"  {test['outcome']}: {test['name']}\n    {test['message'][:400]}")
            if test.get("detail"):
                lines.append(f"    detail: {test['detail'][-2000:]}")
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_case_scores(case: str, graphs_class: Future[GradedClass]) -> None:
    """The case scores what expected.toml says in every part, and shows its feedback."""
    expectation = load_expectation(CORPUS_DIR / case)
    graded = graphs_class.result().entry(case)
    _check_consistent(graded)
    report = graded.report
    wrong = [
        _part_report(report, part) + f"\n  expected {low:g}..{high:g}"
        for part, (low, high) in expectation.scores.items()
        if not low - SCORE_TOLERANCE <= report["parts"][part]["score"] <= high + SCORE_TOLERANCE
    ]
    assert not wrong, f"{case}: {expectation.description}\n" + "\n".join(wrong)
    for part, phrases in expectation.feedback.items():
        messages = "\n".join(
            test["message"]
            for test in report["tests"]
            if test["part"] == part and test["outcome"] != "passed"
        )
        for phrase in phrases:
            assert phrase in messages, _part_report(report, part)


@pytest.mark.slow
def test_reference_scores_full_marks(graphs_class: Future[GradedClass]) -> None:
    graded = graphs_class.result().entry(REFERENCE)
    _check_consistent(graded)
    report = graded.report
    for part, points in POINTS.items():
        assert report["parts"][part]["score"] == points, _part_report(report, part)
    assert {test["outcome"] for test in report["tests"]} <= {"passed", "skipped"}
    assert report["score"] == report["max_score"] == 100


@pytest.mark.slow
def test_stubs_score_zero_everywhere(graphs_class: Future[GradedClass]) -> None:
    graded = graphs_class.result().entry(STUBS)
    _check_consistent(graded)
    report = graded.report
    assert report["score"] == 0
    for test in report["tests"]:
        assert test["score"] == 0, test
        if test["outcome"] == "error":
            assert "Not implemented yet" in test["message"], test
        elif test["outcome"] == "passed":
            assert GATED_NOTE in test["message"], test
        else:
            assert test["outcome"] == "skipped", test


def test_corpus_is_well_formed_with_a_bug_and_an_alternative_in_every_part() -> None:
    bugs: set[str] = set()
    alternatives: set[str] = set()
    for name in CASE_NAMES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", name), name
        case_dir = CORPUS_DIR / name
        expectation = load_expectation(case_dir)
        files = {path.name for path in case_dir.iterdir()} - {"expected.toml"}
        assert files and files <= set(PART_FILES), f"{name}: {sorted(files)}"
        for file_name in files:
            text = (case_dir / file_name).read_text(encoding="utf-8")
            assert text != (SOLUTIONS_DIR / file_name).read_text(encoding="utf-8"), name
        for part in ASSIGNMENT.parts:
            if expectation.scores[part.id][1] < part.points:
                bugs.add(part.id)
            elif part.file in files:
                alternatives.add(part.id)
    assert bugs == set(POINTS)
    assert alternatives == set(POINTS)


# -- public tests, fixtures, notebook --------------------------------------------------------


@dataclass(frozen=True)
class PublicRun:
    passed: list[str]
    failed: dict[str, str]


def run_public_tests(
    student_dir: Path, tmp_path: Path, assignment_dir: Path = ASSIGNMENT_DIR
) -> PublicRun:
    """Run the public tests on `student_dir` as a student would, from the assignment folder
    (this module's assignment's, or `assignment_dir`)."""
    junit = tmp_path / "public.xml"
    run_python(
        "-m",
        "pytest",
        "public_tests",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        cwd=assignment_dir,
        extra_env={"GRADER_STUDENT_DIR": str(student_dir)},
        ok_exit_codes=(0, 1),
    )
    passed, failed = [], {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        problem = next(
            (p for p in (case.find("failure"), case.find("error")) if p is not None), None
        )
        if problem is not None:
            failed[test_id] = f"{problem.get('message', '')}\n{problem.text or ''}"
        elif case.find("skipped") is None:
            passed.append(test_id)
    return PublicRun(passed, failed)


@pytest.mark.slow
def test_public_tests_pass_on_the_reference(tmp_path: Path) -> None:
    run = run_public_tests(assemble(REFERENCE, tmp_path / "reference"), tmp_path)
    assert not run.failed, "\n\n".join(f"{k}\n{v}" for k, v in run.failed.items())
    tested = {test_id.split("::")[0].rsplit(".", 1)[-1] for test_id in run.passed}
    assert tested == {f"test_{part_id}" for part_id in POINTS}


@pytest.mark.slow
def test_public_tests_fail_on_the_stubs(tmp_path: Path) -> None:
    run = run_public_tests(assemble(STUBS, tmp_path / "stubs"), tmp_path)
    assert run.passed == [] and run.failed
    not_stub = {k: v for k, v in run.failed.items() if "NotImplementedError" not in v}
    assert not not_stub, not_stub


@pytest.mark.slow
def test_recorded_fixtures_match_within_tolerance() -> None:
    """Within the grader's tolerances, not byte for byte: CPUs differ in the last bit."""
    assert fixture_problems(ASSIGNMENT) == []
    committed = ASSIGNMENT_DIR / "public_fixtures"
    assert sum(path.stat().st_size for path in committed.iterdir()) < MAX_FIXTURE_BYTES


def test_notebook_has_one_marked_cell_per_part() -> None:
    notebook = nbformat.read(ASSIGNMENT_DIR / "walkthrough.ipynb", as_version=4)
    marked: dict[str, list[str]] = {}
    for cell in notebook.cells:
        assert not cell.get("outputs"), "the committed notebook must hold no outputs"
        for tag in cell.metadata.get("tags", []):
            if tag.startswith("part:"):
                marked.setdefault(tag.removeprefix("part:"), []).append(cell.source)
    assert sorted(marked) == sorted(POINTS)
    for part_id, sources in marked.items():
        assert len(sources) == 1, part_id
        assert sources[0].splitlines()[0] == f"# part: {part_id}"


@pytest.mark.slow
def test_notebook_runs_on_the_reference(tmp_path: Path) -> None:
    folder = assemble(REFERENCE, tmp_path / "reference")
    shutil.copy(ASSIGNMENT_DIR / "walkthrough.ipynb", folder)
    execute_notebook(folder)


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


# -- the commands, with -a ---------------------------------------------------------------------


@pytest.mark.slow
def test_check_and_submit_with_the_assignment_named(tmp_path: Path) -> None:
    folder = assemble(REFERENCE, tmp_path / "reference")
    shutil.copy(ASSIGNMENT_DIR / "walkthrough.ipynb", folder)
    check = run_grader_cli("check", folder, "-a", ASSIGNMENT_ID)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "public tests passed" in check.stdout
    target = tmp_path / "submission.zip"
    submit = run_grader_cli("submit", folder, "-a", ASSIGNMENT_ID, "-o", target)
    assert submit.returncode == 0, submit.stdout + submit.stderr
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == sorted([*PART_FILES, "walkthrough.ipynb"])


@pytest.mark.slow
def test_build_starter_and_autograder_with_the_assignment_named(tmp_path: Path) -> None:
    starter = run_grader_cli("build", "starter", "-a", ASSIGNMENT_ID, "-o", tmp_path / "kit.zip")
    assert starter.returncode == 0, starter.stdout + starter.stderr
    with zipfile.ZipFile(tmp_path / "kit.zip") as archive:
        names = archive.namelist()
    assert any(
        name.endswith("assignments/pytorch_graphs/public_tests/conftest.py") for name in names
    )
    assert not any("solutions" in name or "pytorch_basics" in name for name in names), names
    autograder = run_grader_cli(
        "build", "autograder", "-a", ASSIGNMENT_ID, "-o", tmp_path / "autograder.zip"
    )
    assert autograder.returncode == 0, autograder.stdout + autograder.stderr
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = archive.namelist()
    assert "solutions/pytorch_graphs/hidden_tests/probes.py" in names
    assert not any("pytorch_basics" in name for name in names), names
