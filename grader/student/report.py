"""The pytest plugin `check` loads into its public-test run: one JSON line per event.

Loaded with `-p grader.student.report --public-report PATH` in a separate process (student
code runs there, so a crash or `sys.exit` costs that process, never `check`). It writes:

- `{"event": "collected", "tests": [...]}` once collection is done,
- `{"event": "collect_error", ...}` for a test file that cannot be imported,
- `{"event": "start", "nodeid": ...}` as each test starts (so a hang or crash is placed),
- `{"event": "result", ...}` as each test ends, with an outcome and a message for students.

Not pytest-json-report: it writes its report once, at the end of the session, so a test
that hangs (killed by `check` after the time limit) or kills the process would leave no
result at all, where these per-event lines say which test it was and keep the others'.

Outcomes: "passed", "failed", "not implemented yet", "error", "skipped". Messages are the
assertion's own text (pytest's assertion rewriting is off, see public_run.py), split into what
differed and the hint; an exception from the student's code is named with its line.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from grader.course.manifest import parse_manifest
from grader.course.part_marker import part_of_item
from grader.errors import ConfigError
from grader.grading.hints import Hint, error_hint, has_device_parameter
from grader.grading.suites import display_name
from grader.student.plugin import MANIFEST, assignment_folder

# The fixtures and marker public tests use, so an assignment needs no conftest.py for them.
pytest_plugins = ("grader.student.plugin",)
REPORT_KEY = pytest.StashKey["PublicReport"]()
OUTCOME_KEY = pytest.StashKey[dict[str, str]]()
DURATION_KEY = pytest.StashKey[float]()
MAX_MESSAGE_CHARS = 2000
HINT_SEPARATOR = "\nHint: "


# The fixture through which a public test reads its part's stored reference outputs.
FIXTURE_READER = "load_fixture"


@dataclass(frozen=True)
class TestInfo:
    nodeid: str
    part: str
    name: str
    points: float
    # The test function (one per parameter set), as grading groups its hidden tests.
    function: str
    # Whether it reads the public fixtures (`expected`, `load_fixture`): a comparison with
    # the reference's values, as a hidden test's seeded `compare` is. `check` counts a
    # part's other tests only once these pass (grader/student/check.py).
    reads_fixture: bool


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--public-report", help="write one JSON line per test event to this file")
    parser.addoption("--public-parts", help="run only these parts' tests (comma-separated ids)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--public-report")
    if path:
        report = PublicReport(Path(path), os.environ.get("GRADER_STUDENT_DIR", ""))
        config.stash[REPORT_KEY] = report
        config.pluginmanager.register(report, "grader-public-report")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --public-parts, keep only those parts' tests (a file may hold several parts')."""
    option = config.getoption("--public-parts")
    if option is None:
        return
    wanted = set(option.split(","))
    kept = [item for item in items if part_of_item(item) in wanted]
    deselected = [item for item in items if part_of_item(item) not in wanted]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_unconfigure(config: pytest.Config) -> None:
    report = config.stash.get(REPORT_KEY, None)
    if report is not None:
        report.close()


def test_info(item: pytest.Item) -> TestInfo:
    """The part (grader/course/part_marker.py), readable name and points of a test, and
    whether it compares with the reference's stored values."""
    part = part_of_item(item)
    marker = item.get_closest_marker("points")
    points = float(marker.args[0]) if marker is not None and marker.args else 1.0
    return TestInfo(
        nodeid=item.nodeid,
        part=part,
        name=display_name(item),
        points=points,
        function=getattr(item, "originalname", item.name),
        reads_fixture=FIXTURE_READER in getattr(item, "fixturenames", ()),
    )


class PublicReport:
    """Writes the events; flushed per line so a killed run still leaves what it did."""

    def __init__(self, path: Path, student_dir: str) -> None:
        self.stream: IO[str] = path.open("a", encoding="utf-8")
        self.student_dir = Path(student_dir).resolve() if student_dir else None
        self.hints_by_folder: dict[Path, tuple[Hint, ...]] = {}

    def write(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record) + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests = [asdict(test_info(item)) for item in session.items]
        self.write({"event": "collected", "tests": tests})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = str(report.longrepr)
            lines = [line for line in text.splitlines() if line.startswith("E ")]
            message = "\n".join(line[2:].strip() for line in lines) or text[-MAX_MESSAGE_CHARS:]
            self.write(
                {"event": "collect_error", "nodeid": report.nodeid, "message": message[:4000]}
            )

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.write({"event": "start", "nodeid": nodeid})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        item.stash[DURATION_KEY] = item.stash.get(DURATION_KEY, 0.0) + report.duration
        verdict = item.stash.get(OUTCOME_KEY, None)
        if verdict is None or verdict["outcome"] == "passed":
            if report.failed and call.excinfo is not None:
                verdict = self.describe(call.excinfo, report.when)
                if verdict["outcome"] == "error" and not verdict["hint"]:
                    verdict["hint"] = self.error_hint(item, call.excinfo, verdict["message"])
            elif report.skipped:
                verdict = {"outcome": "skipped", "message": _skip_reason(report), "hint": ""}
            elif verdict is None:
                verdict = {"outcome": "passed", "message": "", "hint": ""}
            item.stash[OUTCOME_KEY] = verdict
        if report.when == "teardown":
            duration: float = item.stash[DURATION_KEY]
            self.write(
                {
                    "event": "result",
                    **asdict(test_info(item)),
                    **verdict,
                    "duration_s": round(duration, 4),
                }
            )

    def describe(self, excinfo: pytest.ExceptionInfo[BaseException], when: str) -> dict[str, str]:
        """Outcome, message and hint of a failure, in words for a student."""
        try:
            return self.describe_exception(excinfo, when)
        except Exception:
            # The exception can be the student's own object, whose str() or attributes may
            # raise or hold anything: this test gets a plain verdict, the others still run.
            return _verdict(
                "error",
                "Your code raised an exception whose details cannot be read.",
                "Raise Python's own exceptions (ValueError, TypeError, ...) with a message.",
            )

    def describe_exception(
        self, excinfo: pytest.ExceptionInfo[BaseException], when: str
    ) -> dict[str, str]:
        """Describe a failure; an exception of the student's making may make this raise."""
        error = excinfo.value
        not_implemented = _find_in_chain(error, NotImplementedError)
        where = self.student_location(excinfo)
        if not_implemented is not None:
            message = str(not_implemented) or "NotImplementedError"
            return _verdict("not implemented yet", message, "")
        if isinstance(error, pytest.fail.Exception):
            return _verdict("failed" if when == "call" else "error", error.msg or "", "")
        if isinstance(error, SyntaxError):
            file = Path(str(error.filename or "your file")).name
            return _verdict(
                "error",
                f"{file} has a syntax error on line {error.lineno}: {error.msg}.",
                "Python cannot read the file; fix that line first.",
            )
        if isinstance(error, AssertionError) and not where:
            text = str(error) or f"This check failed: {self.test_line(excinfo)}"
            return _verdict("failed", text, "")
        kind = type(error).__name__
        text = f"{kind}: {error}" if str(error) else kind
        if when == "setup" and where:
            return _verdict("error", f"Loading your file failed: {text} ({where}).", "")
        if isinstance(error, SystemExit):
            return _verdict(
                "error",
                f"Your code called sys.exit() or exit() ({where or 'while testing'}).",
                "Never exit in a submission: return the value instead.",
            )
        if where:
            return _verdict("error", f"Your code raised {text} ({where}).", "")
        return _verdict(
            "error",
            f"{text}\nwhile the test ran {self.test_line(excinfo)}",
            "Check what your function returns: its docstring says the type and shape.",
        )

    def error_hint(
        self, item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException], message: str
    ) -> str:
        """The hint grading gives for the same error: the manifest's [[hints]] first, then the
        generic PyTorch ones (grader/grading/hints.py), so `check` and `grade` agree."""
        callspec = getattr(item, "callspec", None)
        device = str(callspec.params.get("device", "cpu")) if callspec is not None else "cpu"
        hint = error_hint(
            message,
            device,
            part=part_of_item(item),
            assignment_hints=self.assignment_hints(Path(str(item.path))),
            takes_device=self.student_function_takes_device(excinfo),
        )
        return hint.removeprefix("Hint: ")

    def assignment_hints(self, test_file: Path) -> tuple[Hint, ...]:
        folder = assignment_folder(test_file)
        if folder not in self.hints_by_folder:
            try:
                hints = parse_manifest(folder / MANIFEST).hints
            except (ConfigError, OSError):
                hints = ()  # a kit without a readable manifest still gets the generic hints
            self.hints_by_folder[folder] = hints
        return self.hints_by_folder[folder]

    def student_function_takes_device(self, excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
        """Whether a function of the student's files in the traceback has a `device` parameter
        (grading asks the same of the reference, which `check` does not have)."""
        for entry in excinfo.traceback:
            path = Path(str(entry.path))
            if self.student_dir is None or not path.is_absolute():
                continue
            if path.resolve().parent == self.student_dir and has_device_parameter(
                entry.frame.code.raw
            ):
                return True
        return False

    def student_location(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        """'line N of file.py' for the deepest frame in the student's files, or ''."""
        if self.student_dir is None:
            return ""
        for entry in reversed(excinfo.traceback):
            path = Path(str(entry.path))
            if path.is_absolute() and path.resolve().parent == self.student_dir:
                return f"line {entry.lineno + 1} of {path.name}"
        return ""

    def test_line(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        """The test's line that raised, as "`source` (test_file.py, line N)"."""
        for entry in reversed(excinfo.traceback):
            path = Path(str(entry.path))
            if path.name.startswith("test_"):
                statement = str(entry.statement).strip().splitlines()
                first = statement[0] if statement else ""
                return f"`{first}` ({path.name}, line {entry.lineno + 1})"
        return "(the test's line is unknown)"


def _verdict(outcome: str, message: str, hint: str) -> dict[str, str]:
    if HINT_SEPARATOR in message:
        message, _, given_hint = message.partition(HINT_SEPARATOR)
        hint = given_hint.strip() or hint
    message = message.strip()
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + " ..."
    return {"outcome": outcome, "message": message, "hint": hint[:MAX_MESSAGE_CHARS]}


def _find_in_chain(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")
