"""`python -m grader check`: run the public tests on a student's files and explain the results.

The tests run in a separate pytest process (student code runs there, on the student's own
machine, so a crash or `sys.exit()` in it costs that process and not `check`): see
`grader.student.run`. This module turns what they record into a result per part and prints it.

What is tested is exactly what `grade` would grade: the student's folder goes through
`prepare_submission` first, so notebook code replaces a part's .py file under the same
rule, and stray helper files that would not be submitted are not importable.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.course.manifest import Assignment, available_assignments, choose_assignment
from grader.errors import ConfigError, SubmissionError, UsageError
from grader.grading.scoring import score_tests
from grader.intake.submission import PreparedSubmission, prepare_submission
from grader.results.model import Outcome, TestResult, points, waiting_text
from grader.results.table import OUTCOME_STYLE, message_lines, outcome_label
from grader.student.run import NOT_IMPLEMENTED, PASSED, SKIPPED, PublicTest, run_public_tests

BEYOND_PUBLIC_TESTS = (
    "The grade comes from hidden tests that use secret inputs, other shapes, float64 and, "
    "where the grader has one, a GPU: passing here is a good sign, not a guarantee."
)
# Why a passed test may earn nothing yet: grading's gate (grading/scoring.py), in public terms.
WAITING_WHY = (
    "A test that does not compare your values with the reference's counts only once this "
    "part's tests that do have passed: grading counts its hidden tests the same way."
)
UNSCORED_NOTE = (
    "{part}: no public test of this part compares your values with the reference's, so its "
    "tests earn no points here (-); its {worth:g} points come from the hidden tests alone."
)
NO_PUBLIC_TESTS_NOTE = (
    "{part}: no public tests, so `check` cannot try it; grading tests it with hidden tests "
    "for its {worth:g} points."
)
# A public outcome as scoring knows it: a stub's test is one that did not pass.
SCORING_OUTCOMES: dict[str, Outcome] = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "timeout": "timeout",
    "skipped": "skipped",
    NOT_IMPLEMENTED: "failed",
}


@dataclass(frozen=True)
class PartCheck:
    """One part's public tests: counts, the points they carry, and where the code came from.

    `score` and `max_score` are in the part's grade points (`worth`), shared by the tests'
    weights and gated as grading gates them (`_apply_gate`).
    """

    id: str
    file: str
    # "file", "notebook" or "missing".
    source: str
    passed: int
    total: int
    score: float
    max_score: float
    # The part's weight in the real grade (assignment.toml).
    worth: float
    problem: str = ""
    # Of `passed`, the passes that do not count yet (`PublicTest.waiting`).
    waiting: int = 0
    # False where no public test of the part compares with the reference's values, so none
    # can open its gate: its passes are shown without points (score and max_score 0).
    scored: bool = True

    @property
    def status(self) -> str:
        if self.source == "missing":
            return "missing"
        if self.problem:
            return "cannot run"
        if self.total == 0:
            return "no public tests"
        if self.passed == self.total:
            return "all passed"
        return f"{self.total - self.passed} not passing"


@dataclass(frozen=True)
class CheckResult:
    assignment: str
    directory: Path
    parts: tuple[PartCheck, ...]
    tests: tuple[PublicTest, ...]
    notes: tuple[str, ...] = ()
    # Set when the tests could not run as a whole (a public test file failed to import).
    error: str = ""
    duration_s: float = 0.0

    @property
    def counted(self) -> tuple[PublicTest, ...]:
        """The tests that ran here (not skipped, for example for want of a GPU)."""
        return tuple(test for test in self.tests if test.outcome != SKIPPED)

    @property
    def passed(self) -> bool:
        counted = self.counted
        return not self.error and bool(counted) and all(t.outcome == PASSED for t in counted)

    @property
    def score(self) -> float:
        return round(sum(part.score for part in self.parts), 6)

    @property
    def max_score(self) -> float:
        return round(sum(part.max_score for part in self.parts), 6)

    def to_json(self) -> dict[str, Any]:
        """The same data as the table, for editors and scripts."""
        return {
            "version": 2,
            "assignment": self.assignment,
            "directory": str(self.directory),
            "passed": self.passed,
            "score": self.score,
            "max_score": self.max_score,
            "parts": {
                part.id: {
                    "file": part.file,
                    "source": part.source,
                    "passed": part.passed,
                    "waiting": part.waiting,
                    "total": part.total,
                    "score": part.score,
                    "max_score": part.max_score,
                    "worth": part.worth,
                    "scored": part.scored,
                    "status": part.status,
                    "problem": part.problem,
                }
                for part in self.parts
            },
            "tests": [asdict(test) for test in self.tests],
            "notes": list(self.notes),
            "error": self.error,
            "duration_s": round(self.duration_s, 3),
        }


def resolve_assignment(name: str | None, directory: Path) -> Assignment:
    """The named assignment; else the only one; else the one `directory` is in or holds."""
    return choose_assignment(name, directory)[0]


def again_command(assignment_id: str) -> str:
    """The command to run the public tests again, with -a when the course has several."""
    try:
        several = len(available_assignments()) > 1
    except ConfigError:
        several = False
    return "python -m grader check" + (f" -a {assignment_id}" if several else "")


def locate_student_folder(directory: Path, assignment: Assignment) -> Path:
    """The folder holding the student's files: DIR, DIR/assignments/<id>, a parent, or the kit's.

    Anywhere inside the kit (the course root the assignment was found in), the files are
    the assignment's own folder there.
    """
    if not directory.is_dir():
        raise SubmissionError(f"{directory} is not a folder; name the folder holding your files.")
    wanted = [*assignment.files, *([assignment.notebook] if assignment.notebook else [])]
    start = directory.resolve()
    kit = assignment.directory.parent.parent.resolve()
    inside_assignment = [p for p in start.parents if (p / "assignment.toml").is_file()][:1]
    inside_kit = [assignment.directory] if start.is_relative_to(kit) else []
    for folder in (start, start / "assignments" / assignment.id, *inside_assignment, *inside_kit):
        if any((folder / name).is_file() for name in wanted):
            return folder
    raise SubmissionError(
        f"no file of {assignment.id} ({', '.join(assignment.files)}) in {start}. Run the "
        f"command inside the starter kit's folder, {kit} (the one holding grader/ and "
        "assignments/), or name the folder holding your files: "
        "python -m grader check path/to/folder"
    )


def check_command(
    directory: Path, assignment_name: str | None, *, parts: Sequence[str] | None = None
) -> CheckResult:
    """Find the student's files under `directory` (or take a .zip/.ipynb) and test them.

    `parts`: only these parts' public tests (default: every part's).
    """
    assignment = resolve_assignment(assignment_name, directory)
    known = [part.id for part in assignment.parts]
    unknown = [part for part in parts or () if part not in known]
    if unknown:
        raise UsageError(
            f"{assignment.id} has no part {', '.join(unknown)}; its parts: {', '.join(known)}."
        )
    if directory.is_file() and directory.suffix.lower() in (".zip", ".ipynb"):
        return check_folder(directory, assignment, parts=parts)  # exactly what is uploaded
    return check_folder(locate_student_folder(directory, assignment), assignment, parts=parts)


def check_folder(
    student_dir: Path, assignment: Assignment, *, parts: Sequence[str] | None = None
) -> CheckResult:
    """Prepare the student's folder (or zip, or notebook) as `grade` would, then test it."""
    with tempfile.TemporaryDirectory(prefix="grader-check-") as temporary:
        workdir = Path(temporary)
        prepared = prepare_submission(student_dir, assignment, workdir / "submission")
        return check_prepared(prepared, assignment, student_dir, workdir, parts=parts)


def check_prepared(
    prepared: PreparedSubmission,
    assignment: Assignment,
    student_dir: Path,
    workdir: Path,
    *,
    parts: Sequence[str] | None = None,
) -> CheckResult:
    """Run the public tests on an already prepared submission (`submit` shares this)."""
    started = time.monotonic()
    tests, error = run_public_tests(prepared.directory, assignment, workdir, parts=parts)
    tests = [_explain_unrunnable(test, prepared, assignment, student_dir) for test in tests]
    tests, part_scores = _apply_gate(tests, assignment, prepared)
    checked = [part.id for part in assignment.parts if parts is None or part.id in parts]
    summaries = tuple(
        _summarise(part_id, tests, prepared, assignment, part_scores) for part_id in checked
    )
    return CheckResult(
        assignment=assignment.id,
        directory=student_dir,
        parts=summaries,
        tests=tuple(tests),
        notes=prepared.notes,
        error=error,
        duration_s=time.monotonic() - started,
    )


def _explain_unrunnable(
    test: PublicTest, prepared: PreparedSubmission, assignment: Assignment, student_dir: Path
) -> PublicTest:
    """A missing or unreadable file: say so once in the student's terms, not per-test noise."""
    if test.outcome in (PASSED, SKIPPED) or test.part not in {p.id for p in assignment.parts}:
        return test
    part = assignment.part(test.part)
    if prepared.sources.get(part.id) == "missing":
        message = prepared.problems.get(part.id) or (
            f"{part.file} is missing from {student_dir}; every part needs its file."
        )
        return replace(test, outcome="error", message=message, hint="")
    if part.id in prepared.problems:
        return replace(test, outcome="error", message=prepared.problems[part.id], hint="")
    return test


def _apply_gate(
    tests: list[PublicTest], assignment: Assignment, prepared: PreparedSubmission
) -> tuple[list[PublicTest], dict[str, tuple[float, float] | None]]:
    """Each test's points in its part's grade points, gated as grading gates hidden tests.

    A public test that reads its part's fixture compares with the reference's values, as a
    hidden test's seeded `compare` does, and opens the gate when it passes; the part's other
    tests (properties, rules) are gated: through `grader.grading.scoring.score_tests` itself, they
    count once every such test function of their part has passed. Returns the tests and,
    per part, (score, max_score), or None for a part that cannot be gated so (no test that
    reads the fixture ran here): its passes are shown without points.
    """
    known = [part.id for part in assignment.parts]
    graded = [test for part in known for test in tests if test.part == part]
    results = [
        TestResult(
            name=test.name,
            part=test.part,
            outcome=SCORING_OUTCOMES.get(test.outcome, "error"),
            weight=test.points,
            gated=not test.reads_fixture,
            marked_gated=not test.reads_fixture,
            # A public test runs in the student's own process: what it does not compare with
            # a fixture, it judges there.
            judged_in_process=not test.reads_fixture,
            skipped_for_device=test.outcome == SKIPPED,
            function=test.function or test.nodeid,
        )
        for test in graded
    ]
    parts, scored = score_tests(
        assignment,
        results,
        sources=prepared.sources,
        problems=prepared.problems,
        unverifiable=prepared.unverifiable,
    )
    # score_tests keeps the order it was given (by part, as `graded` is).
    by_nodeid = {test.nodeid: result for test, result in zip(graded, scored, strict=True)}
    # Where a test that reads the fixture ran, the part's gate can open; elsewhere it cannot.
    scorable = {t.part for t in graded if t.reads_fixture and t.outcome != SKIPPED}
    part_scores = {
        part.id: (part.score, part.max_score) if part.id in scorable else None for part in parts
    }
    updated = [
        replace(test, score=result.score, max_score=result.max_score, waits_for=result.waits_for)
        if (result := by_nodeid.get(test.nodeid)) is not None and test.part in scorable
        else test
        for test in tests
    ]
    return updated, part_scores


def _summarise(
    part_id: str,
    tests: list[PublicTest],
    prepared: PreparedSubmission,
    assignment: Assignment,
    part_scores: dict[str, tuple[float, float] | None],
) -> PartCheck:
    part = assignment.part(part_id)
    counted = [t for t in tests if t.part == part_id and t.outcome != SKIPPED]
    passed = [t for t in counted if t.outcome == PASSED]
    score, max_score = part_scores.get(part_id) or (0.0, 0.0)
    return PartCheck(
        id=part.id,
        file=part.file,
        source=prepared.sources.get(part.id, "missing"),
        passed=len(passed),
        total=len(counted),
        score=score,
        max_score=max_score,
        worth=part.points,
        problem=prepared.problems.get(part.id, ""),
        waiting=sum(t.waiting for t in passed),
        scored=part_scores.get(part_id) is not None,
    )


def print_check(
    result: CheckResult, console: Console, *, details: bool = True, again: str | None = None
) -> None:
    """The table per part, notes, then (with `details`) each failure with what differed.

    `again`: the command that runs these tests again (default: the `check` command line).
    """
    console.print(_part_table(result))
    for part in result.parts:
        if part.status == "no public tests":
            console.print(NO_PUBLIC_TESTS_NOTE.format(part=part.id, worth=part.worth), style="dim")
        elif not part.scored and part.total:
            console.print(UNSCORED_NOTE.format(part=part.id, worth=part.worth), style="dim")
    if details:
        for note in result.notes:
            console.print(Text.assemble(("note: ", "yellow"), note))
    if result.error:
        console.print(Text(result.error, style="bold red"))
    if details:
        for part in result.parts:
            _print_part_failures(result, part, console)
    skipped = [t for t in result.tests if t.outcome == SKIPPED]
    if skipped:
        reasons = sorted({t.message for t in skipped if t.message})
        console.print(
            f"{len(skipped)} tests skipped here ({'; '.join(reasons) or 'not applicable'}).",
            style="dim",
        )
    counted = result.counted
    failing = [t for t in counted if t.outcome != PASSED]
    if result.passed:
        console.print(
            Text.assemble((f"All {len(counted)} public tests passed. ", "bold green"))
            + Text(BEYOND_PUBLIC_TESTS)
        )
    elif not counted:
        console.print("No public test ran.", style="bold red")
    else:
        waiting = sum(t.waiting for t in counted)
        console.print(
            Text.assemble(
                (f"{len(failing)} of {len(counted)} public tests not passing. ", "bold red"),
                f"{waiting} of the passing ones do not count yet. " if waiting else "",
                "Fix the first problem of each part, then run "
                f"`{again or again_command(result.assignment)}` again.",
            )
        )


def _part_table(result: CheckResult) -> Table:
    table = Table(
        title=f"{result.assignment}: public tests", caption=f"your files: {result.directory}"
    )
    table.add_column("part")
    table.add_column("passed", justify="right")
    table.add_column("points", justify="right")
    table.add_column("code")
    table.add_column("status")
    for part in result.parts:
        if _all_not_implemented(result, part.id):
            status = Text(NOT_IMPLEMENTED, style="yellow")
        else:
            status = Text(part.status, style="green" if part.status == "all passed" else "red")
        # As grade's table: passes that do not count yet are counted apart.
        counting = part.passed - part.waiting
        table.add_row(
            part.id,
            f"{counting}/{part.total}"
            + (f" (+{part.waiting} not counted yet)" if part.waiting else ""),
            f"{points(part.score)}/{points(part.max_score)}" if part.scored else "-",
            part.source,
            status,
        )
    return table


def print_check_json(result: CheckResult) -> None:
    """Write the result as JSON to stdout (raw, so rich never wraps or colours it)."""
    sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")


def _source_label(part: PartCheck) -> str:
    return {"notebook": "notebook cell", "missing": "missing"}.get(part.source, part.file)


def _all_not_implemented(result: CheckResult, part_id: str) -> bool:
    tests = [t for t in result.counted if t.part == part_id]
    return bool(tests) and all(t.outcome == NOT_IMPLEMENTED for t in tests)


def _points_label(test: PublicTest, part: PartCheck) -> str:
    return f"  ({points(test.score)}/{points(test.max_score)} pts)" if part.scored else ""


def _print_part_failures(result: CheckResult, part: PartCheck, console: Console) -> None:
    """The part's failures, then its passes that do not count yet and what they wait for."""
    failing = [t for t in result.counted if t.part == part.id and t.outcome != PASSED]
    if not failing:
        return  # every test passed, so every test counts
    console.print()
    console.rule(Text(f"{part.id}  ({_source_label(part)})", style="bold"), align="left")
    if part.problem or part.source == "missing":
        # The same reason stops every test of the part: say it once.
        console.print(Text.assemble(("CANNOT RUN  ", "red"), failing[0].message))
        console.print(Text(f"    ({len(failing)} tests of this part could not run)", style="dim"))
        return
    stubs = [t for t in failing if t.outcome == NOT_IMPLEMENTED]
    if stubs:
        # One line for all of them: a stub fails every test that calls it.
        messages = list(dict.fromkeys(t.message for t in stubs))
        console.print(
            Text.assemble(
                (f"{NOT_IMPLEMENTED.upper()}  ", "yellow"),
                f"{len(stubs)} {'tests call' if len(stubs) > 1 else 'test calls'} code that "
                "still raises NotImplementedError:",
            )
        )
        for message in messages:
            console.print(Text("    " + message))
    for test in failing:
        if test.outcome == NOT_IMPLEMENTED:
            continue
        console.print(
            Text.assemble(outcome_label(test.outcome), f"  {test.name}{_points_label(test, part)}")
        )
        for line in message_lines(test.message, rest=""):
            console.print(line)
        if test.hint:
            console.print(Text.assemble(("    hint: ", "cyan"), test.hint))
    waiting = [t for t in result.counted if t.part == part.id and t.waiting]
    for test in waiting:
        label = outcome_label(test.outcome)
        label.stylize(OUTCOME_STYLE["waiting"])
        console.print(Text.assemble(label, f"  {test.name}{_points_label(test, part)}"))
        console.print(Text(f"    {waiting_text(test.waits_for)}", style=OUTCOME_STYLE["waiting"]))
    if waiting:
        console.print(Text(f"    {WAITING_WHY}", style="dim"))
