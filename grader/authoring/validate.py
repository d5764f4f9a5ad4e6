"""`python -m grader validate`: check an assignment before it reaches students.

The quick checks run first, so a missing `points` marker or a probe that imports the
reference is reported in seconds: the files the manifest names, the hidden suite's
collection (every test has points and a part), what probes import, the notebook (its marked
cells, and that it is what its [walkthrough] template renders), the starter kit's leak check
and the public fixtures (regenerated from the reference and compared within the grader's
tolerances, so any CPU agrees). Then the long ones: the reference must score full marks and
the untouched stubs 0, and no test that opens a part's gate may pass against a lying student
side (`grader.authoring.liars`).

Each problem is one line; none means the assignment is ready.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader.authoring.fixtures import (
    FIXTURE_SCRIPT,
    FIXTURES_FOLDER,
    compare_fixture_folders,
    record_in_fresh_interpreter,
    run_fresh_interpreter,
)
from grader.authoring.kit import KIT_REQUIREMENTS
from grader.authoring.public import build_command, stub_problems, unmarked_references
from grader.authoring.thresholds import VALIDATION_SEEDS, MetricFigures, threshold_check
from grader.authoring.validation_grades import ValidationGrader
from grader.course.environment import provided_distributions, undeclared_imports
from grader.course.lock import lock_path, lock_problem, read_lock
from grader.course.manifest import Assignment, load_assignment
from grader.course.part_marker import part_of_item
from grader.errors import ConfigError
from grader.grading.grade import modules_of

# A course's own build script (run_course_script) should take seconds.
FIXTURE_SCRIPT_TIMEOUT_S = 300
# How often a grading check may be off full marks (rounding of part sums).
SCORE_TOLERANCE = 1e-6
LYING_UNAVAILABLE = "lying-student check unavailable (grader.authoring.liars is not installed)"
VALIDATION_REPORT_VERSION = 1

Say = Callable[[str], None]


@dataclass
class Validation:
    """The problems found so far, each said as one line as soon as it is found, and the
    figures of the assignment's metric tests (`grader.authoring.thresholds`)."""

    label: str
    say: Say
    problems: list[str] = field(default_factory=list)
    metrics: list[MetricFigures] = field(default_factory=list)

    def add(self, found: Iterable[str]) -> None:
        for problem in found:
            self.problems.append(problem)
            self.say(f"{self.label}: {problem}")


def validation_report(validations: Iterable[Validation], *, device: str) -> dict[str, Any]:
    """`validate --report`'s JSON: each assignment's problems and metric figures."""
    return {
        "version": VALIDATION_REPORT_VERSION,
        "device": device,
        "seeds": list(VALIDATION_SEEDS),
        "assignments": {
            validation.label: {
                "problems": validation.problems,
                "metrics": [figures.as_data() for figures in validation.metrics],
            }
            for validation in validations
        },
    }


def validate_assignment(name: str | None, *, device: str = "cpu", say: Say = print) -> list[str]:
    """Every problem of assignment `name`, each `say`-ed as one line when found."""
    return validation_of(name, device=device, say=say).problems


def validation_of(name: str | None, *, device: str = "cpu", say: Say = print) -> Validation:
    """Validate assignment `name`: its problems, each `say`-ed as one line when found, and
    its metric tests' figures."""
    try:
        assignment = load_assignment(name)
    except ConfigError as error:
        findings = Validation(name or "assignment", say)
        findings.add([str(error)])
        return findings
    findings = Validation(assignment.id, say)
    with modules_of(assignment.solutions_dir, assignment.directory):
        _validate(assignment, findings, device=device)
    return findings


def _validate(assignment: Assignment, findings: Validation, *, device: str) -> None:
    findings.add(missing_files(assignment))
    findings.add(limits_problems(assignment))
    if findings.problems:
        return
    findings.add(hidden_test_problems(assignment))
    findings.add(probe_import_problems(assignment))
    findings.add(environment_problems(assignment))
    findings.add(notebook_problems(assignment))
    findings.add(starter_kit_problems(assignment))
    findings.add(stub_problems(assignment))
    for note in migration_notes(assignment):
        findings.say(f"{assignment.id}: note: {note}")
    findings.add(fixture_problems(assignment))
    if findings.problems:
        return  # the long checks below would only repeat these
    with ValidationGrader(assignment, device=device) as grader:
        findings.add(grading_problems(assignment, grader))
        thresholds = threshold_check(assignment, grader)
    findings.add(thresholds.problems)
    findings.metrics = thresholds.figures
    for figures in thresholds.figures:
        findings.say(f"{assignment.id}: note: {figures.summary()}")
    try:
        from grader.authoring.liars import gate_openers_against_liars
    except ImportError:
        findings.say(f"{assignment.id}: {LYING_UNAVAILABLE}")
    else:
        liars = gate_openers_against_liars(assignment, device=device)
        findings.add(liars.problems)
        for note in liars.notes:
            findings.say(f"{assignment.id}: note: {note}")


def missing_files(assignment: Assignment) -> Iterator[str]:
    """The files and folders the manifest implies, where they are missing."""
    for part in assignment.parts:
        if not (assignment.directory / part.file).is_file():
            yield f"part {part.id}: the stub {assignment.directory / part.file} is missing"
        if not (assignment.solutions_dir / part.file).is_file():
            yield f"part {part.id}: the reference {assignment.solutions_dir / part.file} is missing"
    if not assignment.hidden_tests_dir.is_dir():
        yield f"no hidden tests: {assignment.hidden_tests_dir} is missing"
    if assignment.notebook and not (assignment.directory / assignment.notebook).is_file():
        yield f"the manifest names the notebook {assignment.notebook}, which is missing"


def limits_problems(assignment: Assignment) -> Iterator[str]:
    """Time limits that cannot hold: a grade must end before the platform stops it."""
    limits = assignment.limits
    if not (limits.timeout_s > 0 and limits.part_budget > 0 and limits.grade_timeout_s > 0):
        yield "[limits]: timeout_s, part_budget_s and grade_timeout_s must be positive seconds"
        return
    count = len(assignment.parts)
    student_time = count * limits.part_budget
    if student_time > limits.grade_timeout_s:
        yield (
            f"[limits]: {count} part{'s' if count != 1 else ''} x part_budget_s "
            f"{limits.part_budget:g} s = {student_time:g} s of student code per grade, more "
            "than grade_timeout_s "
            f"{limits.grade_timeout_s:g} s (the platform's timeout for one grade; Gradescope's "
            "default is 600), which would stop the grader before it writes its results: lower "
            "part_budget_s (default twice timeout_s), or raise the platform's timeout and "
            "grade_timeout_s with it"
        )


class _CollectionCheck:
    """A pytest plugin that collects the hidden suite and notes what each test lacks."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self.problems: list[str] = []
        self.tested: set[str] = set()

    def pytest_configure(self, config: pytest.Config) -> None:
        from grader.grading.plugin import MARKERS

        for marker in MARKERS:
            config.addinivalue_line("markers", marker)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            lines = str(report.longrepr).strip().splitlines() or ["(no message)"]
            why = lines[-1].removeprefix("E").strip()
            self.problems.append(f"hidden test file {report.nodeid} cannot be collected: {why}")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        parts = {part.id for part in self.assignment.parts}
        for item in items:
            part_id = part_of_item(item)
            if part_id not in parts:
                self.problems.append(
                    f"hidden test {item.nodeid}: does not name a part, neither by "
                    "@pytest.mark.part(id) nor by its file's name test_<part>.py "
                    f"(parts: {self.assignment.part_ids()})"
                )
                continue
            self.tested.add(part_id)
            marker = item.get_closest_marker("points")
            points = marker.args[0] if marker is not None and marker.args else None
            # 0 is an author's choice (an advisory test, shown but not counted); a missing,
            # negative or non-numeric weight is a mistake.
            if not isinstance(points, int | float) or isinstance(points, bool) or points < 0:
                self.problems.append(
                    f"hidden test {item.nodeid}: needs @pytest.mark.points(n) with n >= 0"
                )


def hidden_test_problems(assignment: Assignment) -> list[str]:
    """Collect the hidden suite (nothing runs): each test has points and a part."""
    check = _CollectionCheck(assignment)
    with tempfile.TemporaryDirectory(prefix="grader-validate-") as temporary:
        ini = Path(temporary) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        args = [
            str(assignment.hidden_tests_dir),
            "--collect-only",
            "-c", str(ini),
            "--rootdir", str(assignment.hidden_tests_dir),
            "--noconftest",
            "-p", "no:cacheprovider",
            "-p", "no:terminal",
            "-o", "python_files=test_*.py",
            "-W", "ignore::DeprecationWarning",
        ]  # fmt: skip
        saved = sys.dont_write_bytecode
        sys.dont_write_bytecode = True  # nothing written into solutions/
        try:
            with modules_of(assignment.hidden_tests_dir):
                pytest.main(args, plugins=[check])
        finally:
            sys.dont_write_bytecode = saved
    untested = [part.id for part in assignment.parts if part.id not in check.tested]
    return [
        *check.problems,
        *(f"part {part_id}: no hidden test grades it" for part_id in untested),
    ]


def _private_modules(assignment: Assignment) -> set[str]:
    """Module names that would load reference code: the solutions' own files and folders."""
    names = {"solutions", assignment.solutions_dir.name}
    names.update(path.stem for path in assignment.solutions_dir.glob("*.py"))
    names.update(part.module for part in assignment.parts)
    return names


def probe_import_problems(assignment: Assignment) -> Iterator[str]:
    """Probes run on the student side too: they may import nothing from the solutions."""
    private = _private_modules(assignment)
    for path in sorted(assignment.hidden_tests_dir.glob("probes*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as error:
            yield f"{path.name}: cannot be parsed: {error}"
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    yield (
                        f"{path.name} line {node.lineno}: a relative import reaches the "
                        "solutions folder; import only torch, the standard library and grader"
                    )
                    continue
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                if module.split(".")[0] in private:
                    yield (
                        f"{path.name} line {node.lineno}: imports {module}, private code; a "
                        "probe gets the part's module as its first argument instead"
                    )


def environment_problems(assignment: Assignment) -> list[str]:
    """The reference, probes and hidden tests import only what grading has; the lock is fresh."""
    course_root = assignment.directory.parent.parent
    manifest = f"assignments/{assignment.id}/assignment.toml"
    problems = [problem for problem in [lock_problem(assignment, course_root)] if problem]
    if (assignment.directory / KIT_REQUIREMENTS).is_file():
        problems.append(
            f"assignments/{assignment.id}/{KIT_REQUIREMENTS}: `build starter` writes what the "
            f"kit installs from {manifest} [environment]: move what it names beyond the "
            "grader's own packages there (packages, or kit_packages for what only students "
            "use, such as a notebook's plots) and delete it (CHANGELOG.md: An assignment "
            "declares its packages in the manifest)"
        )
    lock = lock_path(assignment)
    locked = (
        [package.name for package in read_lock(lock).packages]
        if assignment.environment.packages and lock.is_file()
        else []
    )
    hidden = sorted(assignment.hidden_tests_dir.rglob("*.py"))
    local = {
        *_private_modules(assignment),
        *(path.stem for path in hidden),
        *(path.name for path in assignment.hidden_tests_dir.rglob("*") if path.is_dir()),
        "grader",
    }
    files = [assignment.solutions_dir / part.file for part in assignment.parts] + hidden
    problems += undeclared_imports(
        [path for path in files if path.is_file()],
        local,
        provided_distributions(assignment.environment, locked),
        root=course_root,
        manifest=manifest,
    )
    return problems


def notebook_problems(assignment: Assignment) -> list[str]:
    """The notebook, if any, is what its template renders, with one marked cell per part."""
    if not assignment.notebook:
        return []
    from grader.notebook import MARKER, TAG_PREFIX
    from grader.notebook.walkthrough import walkthrough_problems

    stale = walkthrough_problems(assignment)
    if stale:
        return stale

    path = assignment.directory / assignment.notebook
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [f"{assignment.notebook} cannot be read as a notebook: {error!r}"]
    counts: dict[str, int] = {}
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        source = "".join(raw) if isinstance(raw, list) else str(raw)
        tags = [str(t) for t in cell.get("metadata", {}).get("tags", [])]
        tags = [t for t in tags if t.startswith(TAG_PREFIX)]
        marker = MARKER.match(source.lstrip().split("\n", 1)[0].strip())
        part_id = tags[0][len(TAG_PREFIX) :].strip() if tags else marker and marker.group(1)
        if part_id:
            counts[part_id] = counts.get(part_id, 0) + 1
    part_ids = [part.id for part in assignment.parts]
    problems = [
        f"{assignment.notebook}: {counts.get(part_id, 0)} cells marked for part {part_id}, "
        "expected 1 (tag it part:<id> and start it with `# part: <id>`)"
        for part_id in part_ids
        if counts.get(part_id, 0) != 1
    ]
    problems += [
        f"{assignment.notebook}: a cell is marked for {part_id}, which is not a part"
        for part_id in sorted(set(counts) - set(part_ids))
    ]
    return problems


def starter_kit_problems(assignment: Assignment) -> list[str]:
    """The starter kit's leak check (the one `build starter` refuses on)."""
    from grader.authoring.build import starter_leaks

    try:
        leaks = starter_leaks(assignment)
    except ConfigError as error:
        return [f"the starter kit cannot be built: {error}"]
    return [f"the starter kit leaks: {leak}" for leak in leaks]


def migration_notes(assignment: Assignment) -> list[str]:
    """What an assignment written before `build public` may move to (CHANGELOG.md: One source
    per part); its hand-kept stubs and fixture script keep working meanwhile."""
    notes = [
        f"{where} marks no solution, so its stub is kept by hand; mark the solution "
        "(# BEGIN SOLUTION / # END SOLUTION) and `build public` writes the stub from it"
        for where in unmarked_references(assignment)
    ]
    if (assignment.solutions_dir / FIXTURE_SCRIPT).is_file():
        notes.append(
            f"{FIXTURE_SCRIPT} still writes the public fixtures; move what it computes into the "
            "public tests as @public_fixture functions, delete it and run "
            f"`{build_command(assignment)}`"
        )
    return notes


def fixture_problems(assignment: Assignment) -> list[str]:
    """Record the public fixtures from the reference again; they must match within tolerance."""
    committed = assignment.directory / FIXTURES_FOLDER
    script = assignment.solutions_dir / FIXTURE_SCRIPT
    with tempfile.TemporaryDirectory(prefix="grader-fixtures-") as temporary:
        out = Path(temporary) / FIXTURES_FOLDER
        try:
            if script.is_file():
                run_course_script(script, out, timeout_s=FIXTURE_SCRIPT_TIMEOUT_S)
                return compare_fixture_folders(out, committed, command=f"python {script}")
            record_in_fresh_interpreter(assignment, out)
        except ConfigError as error:
            return [str(error)]
        except (OSError, subprocess.SubprocessError) as error:
            return [f"{script.name} failed: {error}"]
        return compare_fixture_folders(out, committed, command=build_command(assignment))


def run_course_script(script: Path, out: Path, *, timeout_s: float) -> None:
    """Run one of the course's own build scripts (`script --out out`) in a fresh interpreter.

    The public fixtures and the walkthrough notebook are made this way, so that what is
    committed is exactly what the script writes.
    """
    process = run_fresh_interpreter(
        [str(script), "--out", str(out)], cwd=out.parent, timeout_s=timeout_s
    )
    if process.returncode != 0:
        tail = (process.stderr or process.stdout).strip().splitlines()[-1:]
        raise ConfigError(
            f"{script.name} failed (exit code {process.returncode}): {' '.join(tail)}"
        )


def grading_problems(assignment: Assignment, grader: ValidationGrader) -> list[str]:
    """Grade the reference (full marks expected) and the untouched stubs (0 expected), on
    the first of the metric checks' seeds (whose reference grade they share)."""
    problems: list[str] = []
    for who, source, expected in (
        ("the reference", assignment.solutions_dir, "full"),
        ("the stubs", assignment.directory, "zero"),
    ):
        result = grader.grade(who, grader.part_files(source), seed=VALIDATION_SEEDS[0])
        if result.grader_error:
            first = result.grader_error.strip().splitlines()[:1]
            problems.append(f"grading {who} failed: {' '.join(first)}")
            continue
        for scored in result.parts:
            want = scored.max_score if expected == "full" else 0.0
            if abs(scored.score - want) > SCORE_TOLERANCE:
                failing = [
                    t.name
                    for t in result.tests
                    if t.part == scored.id
                    and (t.score < t.max_score if expected == "full" else t.score > 0)
                ]
                problems.append(
                    f"graded, {who} got {scored.score:g}/{scored.max_score:g} on part "
                    f"{scored.id}, "
                    f"expected {want:g}: {', '.join(failing[:3]) or 'see grade --show-passed'}"
                )
    return problems
