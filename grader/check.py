"""`python -m grader check`: run the public tests on a student's files and explain the results.

The tests run in a separate pytest process (student code runs there, on the student's own
machine, so a crash or `sys.exit()` in it costs that process and not `check`) with the
`grader.public_report` plugin, which writes one JSON line per test. A test that hangs is
stopped after the manifest's per-test time limit, a test that kills the process is
recorded as such, and the tests after either are run in a fresh process.

What is tested is exactly what `grade` would grade: the student's folder goes through
`prepare_submission` first, so notebook code replaces a part's .py file under the same
rule, and stray helper files that would not be submitted are not importable.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.assignment import COURSE_ROOT, Assignment, available_assignments, choose_assignment
from grader.errors import ConfigError, SubmissionError
from grader.submission import PreparedSubmission, prepare_submission

PASSED = "passed"
NOT_IMPLEMENTED = "not implemented yet"
SKIPPED = "skipped"
TIMEOUT = "timeout"
POLL_S = 0.05
# Collection imports torch; on a slow laptop that alone can take a while.
COLLECTION_TIMEOUT_S = 300.0
# After this many timeouts in one part, its remaining tests are not run (each would time out).
TIMEOUTS_PER_PART = 2
MAX_MESSAGE_LINES = 8
BEYOND_PUBLIC_TESTS = (
    "The grade comes from hidden tests that use secret inputs, other shapes, float64 and, "
    "where the grader has one, a GPU: passing here is a good sign, not a guarantee."
)


@dataclass(frozen=True)
class PublicTest:
    """One public test and what happened to it, in words for a student."""

    nodeid: str
    part: str
    name: str
    points: float
    outcome: str
    message: str = ""
    hint: str = ""
    duration_s: float = 0.0


@dataclass(frozen=True)
class PartCheck:
    """One part's public tests: counts, the points they carry, and where the code came from."""

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
        return sum(test.points for test in self.counted if test.outcome == PASSED)

    @property
    def max_score(self) -> float:
        return sum(test.points for test in self.counted)

    def to_json(self) -> dict[str, Any]:
        """The same data as the table, for editors and scripts."""
        return {
            "version": 1,
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
                    "total": part.total,
                    "score": part.score,
                    "max_score": part.max_score,
                    "worth": part.worth,
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
    """The folder holding the student's files: DIR itself, DIR/assignments/<id>, or a parent."""
    if not directory.is_dir():
        raise SubmissionError(f"{directory} is not a folder; name the folder holding your files.")
    wanted = [*assignment.files, *([assignment.notebook] if assignment.notebook else [])]
    start = directory.resolve()
    inside_assignment = [p for p in start.parents if (p / "assignment.toml").is_file()][:1]
    for folder in (start, start / "assignments" / assignment.id, *inside_assignment):
        if any((folder / name).is_file() for name in wanted):
            return folder
    raise SubmissionError(
        f"no file of {assignment.id} ({', '.join(assignment.files)}) in {directory}. Run the "
        "command in the starter kit's folder (the one holding grader/ and assignments/), or "
        "name the folder holding your files: python -m grader check path/to/folder"
    )


def check_command(directory: Path, assignment_name: str | None) -> CheckResult:
    """Find the student's files under `directory` (or take a .zip/.ipynb) and test them."""
    assignment = resolve_assignment(assignment_name, directory)
    if directory.is_file() and directory.suffix.lower() in (".zip", ".ipynb"):
        return check_folder(directory, assignment)  # exactly what would be uploaded
    return check_folder(locate_student_folder(directory, assignment), assignment)


def check_folder(student_dir: Path, assignment: Assignment) -> CheckResult:
    """Prepare the student's folder (or zip, or notebook) as `grade` would, then test it."""
    with tempfile.TemporaryDirectory(prefix="grader-check-") as temporary:
        workdir = Path(temporary)
        prepared = prepare_submission(student_dir, assignment, workdir / "submission")
        return check_prepared(prepared, assignment, student_dir, workdir)


def check_prepared(
    prepared: PreparedSubmission, assignment: Assignment, student_dir: Path, workdir: Path
) -> CheckResult:
    """Run the public tests on an already prepared submission (`submit` shares this)."""
    started = time.monotonic()
    tests, error = run_public_tests(prepared.directory, assignment, workdir)
    tests = [_explain_unrunnable(test, prepared, assignment, student_dir) for test in tests]
    parts = tuple(_summarise(part.id, tests, prepared, assignment) for part in assignment.parts)
    return CheckResult(
        assignment=assignment.id,
        directory=student_dir,
        parts=parts,
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


def _summarise(
    part_id: str, tests: list[PublicTest], prepared: PreparedSubmission, assignment: Assignment
) -> PartCheck:
    part = assignment.part(part_id)
    counted = [t for t in tests if t.part == part_id and t.outcome != SKIPPED]
    passed = [t for t in counted if t.outcome == PASSED]
    return PartCheck(
        id=part.id,
        file=part.file,
        source=prepared.sources.get(part.id, "missing"),
        passed=len(passed),
        total=len(counted),
        score=sum(t.points for t in passed),
        max_score=sum(t.points for t in counted),
        worth=part.points,
        problem=prepared.problems.get(part.id, ""),
    )


@dataclass
class _Run:
    """What one pytest process reported."""

    collected: list[dict[str, Any]] | None = None
    results: dict[str, PublicTest] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    # Node id -> when its "start" event was read; the one still running is `unfinished`.
    started: dict[str, float] = field(default_factory=dict)
    unfinished: str | None = None
    timed_out: bool = False
    returncode: int = 0
    log: str = ""


def run_public_tests(
    student_dir: Path, assignment: Assignment, workdir: Path, *, timeout_s: float | None = None
) -> tuple[list[PublicTest], str]:
    """Run every public test on the files in `student_dir`; return the tests and a run error.

    `timeout_s` is the limit per test (default: the manifest's).
    """
    tests_dir = assignment.public_tests_dir
    if not tests_dir.is_dir():
        raise ConfigError(f"public tests not found at {tests_dir}; reinstall the starter kit.")
    if timeout_s is None:
        timeout_s = float(assignment.limits.timeout_s)
    targets = [str(tests_dir)]
    collected: list[dict[str, Any]] = []
    results: dict[str, PublicTest] = {}
    timeouts: dict[str, int] = {}
    # Each run records at least one test or ends the loop, so this stops.
    for attempt in itertools.count(1):
        run = _run_pytest(targets, student_dir, tests_dir, workdir / f"run-{attempt}", timeout_s)
        if attempt == 1:
            if run.collect_errors:
                return [], "The public tests could not be loaded:\n" + "\n".join(run.collect_errors)
            if run.collected is None:
                why = "took too long" if run.timed_out else f"exit code {run.returncode}"
                return [], f"The public tests did not start ({why}).\n{run.log}"
            collected = run.collected
        results.update(run.results)
        if run.unfinished is not None:
            info = next(t for t in collected if t["nodeid"] == run.unfinished)
            results[run.unfinished] = _stopped_test(info, run, timeout_s)
            if run.timed_out:
                timeouts[info["part"]] = timeouts.get(info["part"], 0) + 1
        remaining = [t for t in collected if t["nodeid"] not in results]
        for info in remaining:
            if timeouts.get(info["part"], 0) >= TIMEOUTS_PER_PART:
                results[info["nodeid"]] = PublicTest(
                    **info,
                    outcome=TIMEOUT,
                    message=f"Not run: {TIMEOUTS_PER_PART} earlier tests of this part ran out "
                    "of time. Fix the slow or endless code first.",
                )
        remaining = [t for t in remaining if t["nodeid"] not in results]
        if not remaining:
            break
        if run.unfinished is None:
            # The process ended between tests (an interrupt, a crash in pytest itself).
            for info in remaining:
                results[info["nodeid"]] = PublicTest(
                    **info,
                    outcome="error",
                    message=f"Not run: the test process stopped early (exit code "
                    f"{run.returncode}).\n{run.log[-1000:]}".strip(),
                )
            break
        targets = [str(tests_dir / info["nodeid"]) for info in remaining]
    return [results[t["nodeid"]] for t in collected], ""


def _stopped_test(info: dict[str, Any], run: _Run, timeout_s: float) -> PublicTest:
    if run.timed_out:
        return PublicTest(
            **info,
            outcome=TIMEOUT,
            message=f"Stopped after {timeout_s:g} s: look for an endless loop, or far more "
            "work than the test asks for.",
            duration_s=timeout_s,
        )
    if run.returncode < 0:
        try:
            name = signal.Signals(-run.returncode).name
        except ValueError:
            name = f"signal {-run.returncode}"
        message = (
            f"The test process was killed by {name} during this test: your code crashed "
            "Python or ran out of memory."
        )
    else:
        message = (
            f"The test process ended during this test (exit code {run.returncode}): does your "
            "code call os._exit() or end the process some other way?"
        )
    return PublicTest(**info, outcome="error", message=message)


def _environment(student_dir: Path) -> dict[str, str]:
    """The student's environment minus pytest settings, with the kit's grader importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRADER_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # other installed plugins change behaviour
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["GRADER_STUDENT_DIR"] = str(student_dir)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(COURSE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return env


def _pytest_command(targets: Sequence[str], tests_dir: Path, workdir: Path) -> list[str]:
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        sys.executable, "-m", "pytest", *targets,
        "-c", str(ini),
        "--rootdir", str(tests_dir),
        "-p", "grader.public_report",
        "--public-report", str(workdir / "events.jsonl"),
        "-p", "no:cacheprovider",
        # Plain asserts: a failure message is the test's own words, not pytest's introspection.
        "--assert=plain",
        "-o", "python_files=test_*.py",
        "-q",
    ]  # fmt: skip


def _run_pytest(
    targets: Sequence[str], student_dir: Path, tests_dir: Path, workdir: Path, timeout_s: float
) -> _Run:
    workdir.mkdir(parents=True)
    events = workdir / "events.jsonl"
    events.touch()
    log_path = workdir / "pytest.log"
    run = _Run()
    with log_path.open("wb") as log, events.open("r", encoding="utf-8") as reader:
        process = subprocess.Popen(
            _pytest_command(targets, tests_dir, workdir),
            cwd=workdir,
            env=_environment(student_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=os.name == "posix",
        )
        began = time.monotonic()
        pending = ""
        try:
            while True:
                try:
                    returncode: int | None = process.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    returncode = None
                pending = _read_events(reader, pending, run)
                if returncode is not None:
                    run.returncode = returncode
                    break
                now = time.monotonic()
                current = run.unfinished
                if current is not None and now - run.started[current] > timeout_s:
                    run.timed_out = True
                    break
                if run.collected is None and now - began > COLLECTION_TIMEOUT_S:
                    run.timed_out = True
                    break
        finally:
            _kill(process)
        pending = _read_events(reader, pending, run)
    run.log = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
    return run


def _read_events(reader: IO[str], pending: str, run: _Run) -> str:
    """Apply the complete lines written since the last read; return an incomplete tail."""
    pending += reader.read()
    *lines, pending = pending.split("\n")
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        event = record.pop("event")
        if event == "collected":
            run.collected = record["tests"]
        elif event == "collect_error":
            run.collect_errors.append(_collect_error(record))
        elif event == "start":
            run.unfinished = record["nodeid"]
            run.started[record["nodeid"]] = time.monotonic()
        elif event == "result":
            run.results[record["nodeid"]] = PublicTest(**record)
            if run.unfinished == record["nodeid"]:
                run.unfinished = None
    return pending


def _collect_error(record: dict[str, Any]) -> str:
    return f"{record['nodeid'] or 'the test folder'}: {record['message']}"


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Stop the test process and anything it started (DataLoader workers, ...)."""
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    elif process.poll() is None:
        process.kill()
    process.wait()


OUTCOME_STYLE = {
    PASSED: "green",
    "failed": "red",
    "error": "red",
    TIMEOUT: "magenta",
    NOT_IMPLEMENTED: "yellow",
    SKIPPED: "dim",
}


def print_check(result: CheckResult, console: Console, *, details: bool = True) -> None:
    """The table per part, notes, then (with `details`) each failure with what differed."""
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
        table.add_row(
            part.id,
            f"{part.passed}/{part.total}",
            f"{part.score:g}/{part.max_score:g}",
            part.source,
            status,
        )
    console.print(table)
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
        console.print(
            Text.assemble(
                (f"{len(failing)} of {len(counted)} public tests not passing. ", "bold red"),
                "Fix the first problem of each part, then run "
                f"`{again_command(result.assignment)}` again.",
            )
        )


def print_check_json(result: CheckResult) -> None:
    """Write the result as JSON to stdout (raw, so rich never wraps or colours it)."""
    sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")


def _source_label(part: PartCheck) -> str:
    return {"notebook": "notebook cell", "missing": "missing"}.get(part.source, part.file)


def _all_not_implemented(result: CheckResult, part_id: str) -> bool:
    tests = [t for t in result.counted if t.part == part_id]
    return bool(tests) and all(t.outcome == NOT_IMPLEMENTED for t in tests)


def _print_part_failures(result: CheckResult, part: PartCheck, console: Console) -> None:
    failing = [t for t in result.counted if t.part == part.id and t.outcome != PASSED]
    if not failing:
        return
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
                f"{len(stubs)} test{'s' if len(stubs) > 1 else ''} call code that still raises "
                "NotImplementedError:",
            )
        )
        for message in messages:
            console.print(Text("    " + message))
    for test in failing:
        if test.outcome == NOT_IMPLEMENTED:
            continue
        console.print(
            Text.assemble(
                (f"{test.outcome.upper():8}", OUTCOME_STYLE.get(test.outcome, "red")),
                f"  {test.name}  ({test.points:g} pts)",
            )
        )
        lines = test.message.splitlines()
        for line in lines[:MAX_MESSAGE_LINES]:
            console.print(Text("    " + line))
        if len(lines) > MAX_MESSAGE_LINES:
            console.print(Text(f"    ... ({len(lines) - MAX_MESSAGE_LINES} more lines)"))
        if test.hint:
            console.print(Text.assemble(("    hint: ", "cyan"), test.hint))
