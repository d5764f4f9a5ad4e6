"""Running the public tests in their own pytest process, and reading what it records.

`check` starts pytest with the `grader.student.report` plugin, which writes one JSON line per
event (collected, start, result) to a file that is read while the process runs: a test that
hangs past the per-test time limit is stopped, a test that kills the process is recorded as
such, and the tests after either are run again in a fresh process.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from grader.course.manifest import Assignment
from grader.course.part_marker import part_of_file
from grader.course.root import PACKAGE_ROOT
from grader.errors import ConfigError
from grader.grading.suites import TIMEOUTS_PER_PART, TIMEOUTS_PER_PART_MESSAGE
from grader.sandbox.jsonlines import JsonLines

PASSED = "passed"
NOT_IMPLEMENTED = "not implemented yet"
SKIPPED = "skipped"
TIMEOUT = "timeout"
POLL_S = 0.05
# Collection imports torch; on a slow laptop that alone can take a while.
COLLECTION_TIMEOUT_S = 300.0
# Far above one event's size (a result's message is capped by the plugin; `collected` lists
# every test's name): only a process that never ends a line reaches it.
MAX_EVENT_BYTES = 16 << 20
# The fields the `grader.student.report` plugin writes, by event, with their JSON types: a
# collected test (its `TestInfo`), a result (that, with its verdict) and a collection error.
TEST_INFO_FIELDS: dict[str, type] = {
    "nodeid": str,
    "part": str,
    "name": str,
    "points": float,
    "function": str,
    "reads_fixture": bool,
}
RESULT_FIELDS: dict[str, type] = {
    **TEST_INFO_FIELDS,
    "outcome": str,
    "message": str,
    "hint": str,
    "duration_s": float,
}
COLLECT_ERROR_FIELDS: dict[str, type] = {"nodeid": str, "message": str}


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
    # The test function, and whether it compares with the reference's stored values
    # (`grader.student.report.TestInfo`).
    function: str = ""
    reads_fixture: bool = False
    # Set by `check`, which applies grading's gate: what the test earns in its part's points,
    # and, for a pass that does not count yet, the tests it waits for (as `TestResult`).
    score: float = 0.0
    max_score: float = 0.0
    waits_for: str = ""

    @property
    def waiting(self) -> bool:
        """Whether it passed without counting yet: its part's comparisons have not all passed."""
        return self.outcome == PASSED and bool(self.waits_for)


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
    events: JsonLines = field(default_factory=lambda: JsonLines(MAX_EVENT_BYTES))


@dataclass
class _Progress:
    """The public tests across the pytest processes that run them."""

    collected: list[dict[str, Any]]
    timeout_s: float
    results: dict[str, PublicTest] = field(default_factory=dict)
    # Part id -> how many of its tests ran out of time.
    timeouts: dict[str, int] = field(default_factory=dict)

    def remaining(self) -> list[dict[str, Any]]:
        return [t for t in self.collected if t["nodeid"] not in self.results]

    def record(self, run: _Run) -> None:
        """Take one process's results, the test it was stopped in, and the tests now skipped."""
        self.results.update(run.results)
        info = next((t for t in self.collected if t["nodeid"] == run.unfinished), None)
        if info is None:
            # Not a test this run was given (a line the student's code wrote): rerunning
            # would meet it again, so the tests left are reported as not run.
            run.unfinished = None
        else:
            self.results[info["nodeid"]] = _stopped_test(info, run, self.timeout_s)
            if run.timed_out:
                self.timeouts[info["part"]] = self.timeouts.get(info["part"], 0) + 1
        for info in self.remaining():
            if self.timeouts.get(info["part"], 0) >= TIMEOUTS_PER_PART:
                self.results[info["nodeid"]] = PublicTest(
                    **info, outcome=TIMEOUT, message=TIMEOUTS_PER_PART_MESSAGE
                )

    def not_run(self, run: _Run) -> None:
        """The process ended between tests (an interrupt, a crash in pytest itself)."""
        message = (
            f"Not run: the test process stopped early (exit code {run.returncode}).\n"
            f"{run.log[-1000:]}"
        ).strip()
        for info in self.remaining():
            self.results[info["nodeid"]] = PublicTest(**info, outcome="error", message=message)


def run_public_tests(
    student_dir: Path,
    assignment: Assignment,
    workdir: Path,
    *,
    timeout_s: float | None = None,
    parts: Sequence[str] | None = None,
) -> tuple[list[PublicTest], str]:
    """Run the public tests on the files in `student_dir`; return the tests and a run error.

    `timeout_s` is the limit per test (default: the manifest's); `parts` limits the run to
    those parts' test files (default: every test).
    """
    tests_dir = assignment.public_tests_dir
    if not tests_dir.is_dir():
        raise ConfigError(f"public tests not found at {tests_dir}; reinstall the starter kit.")
    if timeout_s is None:
        timeout_s = float(assignment.limits.timeout_s)
    first = [str(tests_dir)]
    if parts is not None:
        # Each named part's own file, and the files named after no part (which declare the
        # parts of their tests); the report plugin deselects the other parts' tests.
        known = set(assignment.part_ids())
        first = [
            str(path)
            for path in sorted(tests_dir.glob("test_*.py"))
            if part_of_file(path) in parts or part_of_file(path) not in known
        ]
        if not first:
            return [], ""
    run = _run_pytest(first, student_dir, tests_dir, workdir / "run-1", timeout_s, parts)
    if run.collect_errors:
        return [], "The public tests could not be loaded:\n" + "\n".join(run.collect_errors)
    if run.collected is None:
        why = "took too long" if run.timed_out else f"exit code {run.returncode}"
        return [], f"The public tests did not start ({why}).\n{run.log}"
    progress = _Progress(run.collected, timeout_s)
    # Each run records at least one test or ends the loop, so this stops.
    for attempt in itertools.count(2):
        progress.record(run)
        remaining = progress.remaining()
        if not remaining:
            break
        if run.unfinished is None:
            progress.not_run(run)
            break
        targets = [str(tests_dir / info["nodeid"]) for info in remaining]
        run = _run_pytest(
            targets, student_dir, tests_dir, workdir / f"run-{attempt}", timeout_s, parts
        )
    return [progress.results[t["nodeid"]] for t in progress.collected], ""


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
        [str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return env


def _pytest_command(
    targets: Sequence[str], tests_dir: Path, workdir: Path, parts: Sequence[str] | None
) -> list[str]:
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    only = ["--public-parts", ",".join(parts)] if parts is not None else []
    return [
        sys.executable, "-m", "pytest", *targets, *only,
        "-c", str(ini),
        "--rootdir", str(tests_dir),
        "-p", "grader.student.report",
        "--public-report", str(workdir / "events.jsonl"),
        "-p", "no:cacheprovider",
        # Plain asserts: a failure message is the test's own words, not pytest's introspection.
        "--assert=plain",
        "-o", "python_files=test_*.py",
        "-q",
    ]  # fmt: skip


def _run_pytest(
    targets: Sequence[str],
    student_dir: Path,
    tests_dir: Path,
    workdir: Path,
    timeout_s: float,
    parts: Sequence[str] | None = None,
) -> _Run:
    workdir.mkdir(parents=True)
    events = workdir / "events.jsonl"
    events.touch()
    log_path = workdir / "pytest.log"
    run = _Run()
    with log_path.open("wb") as log, events.open("rb") as reader:
        process = subprocess.Popen(
            _pytest_command(targets, tests_dir, workdir, parts),
            cwd=workdir,
            env=_environment(student_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=os.name == "posix",
        )
        began = time.monotonic()
        try:
            while True:
                try:
                    returncode: int | None = process.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    returncode = None
                _read_events(reader, run)
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
        _read_events(reader, run)
    run.log = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
    return run


def _read_events(reader: IO[bytes], run: _Run) -> None:
    """Apply the events on the complete lines written since the last read.

    Student code runs in the process that writes them and may write lines of its own: a
    record without the fields its event carries, with the right types, is dropped, and only
    those fields are read.
    """
    for record in run.events.feed(reader.read()):
        event = record.get("event")
        if event == "collected" and run.collected is None:
            run.collected = _collected_tests(record.get("tests"))
        elif event == "collect_error" and (error := _typed(record, COLLECT_ERROR_FIELDS)):
            run.collect_errors.append(_collect_error(error))
        elif event == "start" and _typed(record, {"nodeid": str}) and run.collected:
            nodeid = record["nodeid"]
            if any(info["nodeid"] == nodeid for info in run.collected):
                run.unfinished = nodeid
                run.started[nodeid] = time.monotonic()
        elif event == "result" and (result := _typed(record, RESULT_FIELDS)):
            run.results[result["nodeid"]] = PublicTest(**result)
            if run.unfinished == result["nodeid"]:
                run.unfinished = None


def _collected_tests(tests: object) -> list[dict[str, Any]] | None:
    """The collected tests' fields, or None where the list or any test in it is malformed."""
    if not isinstance(tests, list):
        return None
    infos = [_typed(test, TEST_INFO_FIELDS) if isinstance(test, dict) else None for test in tests]
    return None if None in infos else [info for info in infos if info is not None]


def _typed(record: dict[str, Any], fields: dict[str, type]) -> dict[str, Any] | None:
    """`record`'s `fields`, or None where one is missing or of another type."""
    picked = {name: record.get(name) for name in fields}
    for name, kind in fields.items():
        value = picked[name]
        if kind is float:
            # JSON numbers; never a bool (an int in Python), never inf or nan.
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            if not math.isfinite(value):
                return None
            picked[name] = float(value)
        elif not isinstance(value, kind):
            return None
    return picked


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
