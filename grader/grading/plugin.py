"""The pytest plugin that runs hidden suites on the trusted side.

It provides the fixtures hidden tests use (`compare`, `student`, `reference`, `seed`,
`device`, `student_source`; see docs/writing-hidden-tests.md), checks the markers at
collection, and records one `TestResult` per test. Student code only ever runs through
`GradingSession` (grader.grading.session), in the sandbox; the reference runs here,
concurrently with it. A test that reads student source runs in a limited child of this
process (`GradingSession.run_source_test`). Whether a test opens its part's gate is judged
by grader.grading.gate from how it ran.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from grader.course.environment import (
    MissingPackage,
    missing_module,
    missing_module_in,
    missing_package_message,
    staff_modules,
)
from grader.course.manifest import Part
from grader.course.part_marker import PART_MARKER_HELP, part_of_function, part_of_item
from grader.grading.causes import (
    WRONG_ANSWER,
    combine_fingerprints,
    output_fingerprint,
    student_failure_cause,
)
from grader.grading.gate import (
    SEEDED_COMPARES_KEY,
    counts_after,
    holds_seed,
    marked_gated,
    opens_gate,
    self_reported_by_use,
)
from grader.grading.hints import error_hint, failing_functions, takes_device_argument
from grader.grading.metrics import MetricScore
from grader.grading.seeds import hidden_seed
from grader.grading.session import GradingSession, Probe
from grader.grading.suites import display_name
from grader.results.model import LeaderboardEntry, LeaderboardOrder, Outcome, TestResult
from grader.rules import StudentSource
from grader.sandbox.feedback import StudentFailure

MARKERS = (
    "points(n): the weight of this test inside its part",
    "static_rule: a source rule whose points count only once a seeded comparison passes",
    "self_reported: a verdict computed on the student side (forgeable there), gated the same way",
    "counts_after(*tests): gated on one of these gate-opening tests of the module passing",
    "visibility(level): Gradescope visibility overriding the manifest's",
    "cuda_only: skipped when grading on CPU",
    PART_MARKER_HELP,
)
PART_KEY = pytest.StashKey[Part]()
# One entry per `compare` call of a test that returned: the student's outputs, fingerprinted
# only if the test fails (to group equal wrong answers), and dropped once it is recorded.
STUDENT_OUTPUTS_KEY = pytest.StashKey[list[Any]]()
# Set once a test has received data from the student side: from then on, an exception that is
# not an assertion most likely comes from that data's shape (a missing key, a list where a
# dict was due, an int too large for a float), which the student side fully controls.
STUDENT_DATA_KEY = pytest.StashKey[bool]()
# The metric a test reported through the `metric` fixture (at most one a test), and what it
# put on the leaderboard through `leaderboard`.
METRIC_KEY = pytest.StashKey[MetricScore]()
LEADERBOARD_KEY = pytest.StashKey[list[LeaderboardEntry]]()
# Fixtures that run the student's code: they talk to the sandbox, which a test running in a
# child cannot, so a test that reads `student_source` may not use them.
STUDENT_RUNNING_FIXTURES = ("compare", "student", "judge")
UNCHECKABLE_RESULT_MESSAGE = (
    "What your code returned could not be checked: it does not have the type or structure "
    "this test expects ({error}). Compare what your function returns with the assignment's "
    "contract (types, dict keys, list lengths, finite numbers)."
)
INTERNAL_ERROR_MESSAGE = (
    "The grader could not finish this test because of an internal problem, not because of "
    "your code. Course staff can see the details."
)


def _fingerprint(student_output: Any) -> str:
    """`output_fingerprint`, or "" where the decoded data cannot be hashed: it only groups."""
    try:
        return output_fingerprint(student_output)
    except Exception:
        return ""


def _as_float(value: Any) -> float:
    """A metric's value as a float (a 0-d tensor or numpy scalar converts); NaN if it cannot."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return math.nan


def _student_facing_assertion(error: BaseException) -> str:
    text = str(error)
    # pytest appends its own `assert ...` introspection; the message above it is ours.
    head, separator, _ = text.partition("\nassert ")
    return (head if separator else text).strip() or "The result differs from the reference."


class GraderPlugin:
    """Registered into the hidden-suite pytest run by grader/grading/grade.py."""

    def __init__(self, session: GradingSession) -> None:
        self.session = session
        self.records: list[TestResult] = []
        self.collection_errors: list[str] = []
        # What the grading environment lacked (staff-side: a package to declare), once each.
        self.environment_errors: list[str] = []
        self._staff_modules: frozenset[str] | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        for line in MARKERS:
            config.addinivalue_line("markers", line)
        # Student failures carry their own messages; pytest's long tracebacks are slow to
        # build for every failed test and only staff read them (for the grader's own errors).
        config.option.tbstyle = "native"

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        parts = {part.id: part for part in self.session.assignment.parts}
        for item in items:
            part_id = part_of_item(item)
            if part_id not in parts:
                self.collection_errors.append(
                    f"{item.nodeid}: names no part, neither by @pytest.mark.part(id) nor by "
                    f"its file's name test_<part>.py ({self.session.assignment.part_ids()})"
                )
                continue
            item.stash[PART_KEY] = parts[part_id]
            marker = item.get_closest_marker("points")
            if marker is None or not marker.args or not isinstance(marker.args[0], int | float):
                self.collection_errors.append(f"{item.nodeid}: needs @pytest.mark.points(n)")
            self._check_counts_after(item)
            fixtures = getattr(item, "fixturenames", ())
            running = [name for name in STUDENT_RUNNING_FIXTURES if name in fixtures]
            if "student_source" in fixtures and running:
                self.collection_errors.append(
                    f"{item.nodeid}: reads student_source, so it runs in a bounded child "
                    f"that cannot reach the sandbox: move {', '.join(running)} to another test"
                )
            if self._skipped_for_device(item):
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU; graded on CPU"))
        if self.collection_errors:
            raise pytest.UsageError("\n".join(self.collection_errors))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A hidden test file that cannot import a package: say which one to declare."""
        missing = missing_module_in(report.longreprtext) if report.failed else None
        if missing is not None:
            message = missing_package_message(missing, self.session.assignment.id)
            self.collection_errors.append(f"{report.nodeid}: {message}")
            self._environment_error(message)

    def _environment_error(self, message: str) -> None:
        if message not in self.environment_errors:
            self.environment_errors.append(message)

    def _missing_package(self, error: BaseException) -> str | None:
        """The staff-side message when `error` comes from a package grading lacks."""
        if isinstance(error, MissingPackage):
            return str(error)
        if isinstance(error, StudentFailure):
            # The student's side lacks it too; only a module the staff's files import is
            # theirs to declare (a student's own import of a package not given is not).
            missing = missing_module_in(f"{error.message}\n{error.detail}")
            if self._staff_modules is None:
                assignment = self.session.assignment
                self._staff_modules = staff_modules(
                    [
                        *(assignment.solutions_dir / part.file for part in assignment.parts),
                        *assignment.hidden_tests_dir.rglob("*.py"),
                    ]
                )
            if missing is None or missing not in self._staff_modules:
                return None
        else:
            missing = missing_module(error)
        if missing is None:
            return None
        return missing_package_message(missing, self.session.assignment.id)

    def _skipped_for_device(self, item: pytest.Item) -> bool:
        return bool(item.get_closest_marker("cuda_only")) and self.session.device != "cuda"

    def _check_counts_after(self, item: pytest.Item) -> None:
        """`counts_after` names test functions of the item's own module and part."""
        marker = item.get_closest_marker("counts_after")
        if marker is None:
            return
        module = getattr(item, "module", None)
        path = Path(str(item.path))
        unknown = [
            name
            for name in marker.args
            if not isinstance(name, str)
            or not name.startswith("test_")
            or not inspect.isfunction(function := getattr(module, name, None))
            or module is None
            or part_of_function(function, module, path) != part_of_item(item)
        ]
        if unknown or not marker.args:
            self.collection_errors.append(
                f"{item.nodeid}: @pytest.mark.counts_after takes the names of test functions "
                f"of the same module and part (not {unknown or 'nothing'})"
            )

    # -- fixtures ---------------------------------------------------------------------------

    @pytest.fixture
    def seed(self, request: pytest.FixtureRequest) -> int:
        return hidden_seed(self.session.seed, request.node.nodeid)

    @pytest.fixture
    def device(self) -> str:
        return self.session.device

    @pytest.fixture
    def student_source(self, request: pytest.FixtureRequest) -> StudentSource:
        return self.session.source(request.node.stash[PART_KEY])

    @pytest.fixture
    def compare(self, request: pytest.FixtureRequest) -> Callable[..., tuple[Any, Any]]:
        node = request.node
        part = node.stash[PART_KEY]
        session = self.session
        test_seed = hidden_seed(session.seed, node.nodeid)
        seeded_compares = node.stash.setdefault(SEEDED_COMPARES_KEY, [])
        outputs = node.stash.setdefault(STUDENT_OUTPUTS_KEY, [])

        def run(probe: Probe, /, **kwargs: Any) -> tuple[Any, Any]:
            seeded_compares.append(holds_seed(kwargs, test_seed))
            job = session.start(part, probe, kwargs)
            try:
                # The reference runs here while the student's child runs on the other core.
                want = session.reference_output(part, probe, kwargs)
            except BaseException:
                with contextlib.suppress(StudentFailure):
                    session.finish(part, job)
                raise
            got = session.finish(part, job)
            node.stash[STUDENT_DATA_KEY] = True
            outputs.append(got)
            return got, want

        return run

    @pytest.fixture
    def student(self, request: pytest.FixtureRequest) -> Callable[..., Any]:
        part = request.node.stash[PART_KEY]
        session = self.session

        def run(probe: Probe, /, **kwargs: Any) -> Any:
            got = session.finish(part, session.start(part, probe, kwargs))
            request.node.stash[STUDENT_DATA_KEY] = True
            return got

        return run

    @pytest.fixture
    def judge(self, request: pytest.FixtureRequest) -> Callable[..., Any]:
        """Run `probe(None, **kwargs)` in a fresh sandboxed process that never imports the
        student's code, and return its data: how an artifact the student's code made (an
        exported program's or a checkpoint's bytes, returned through `compare`) is loaded and
        run, where nothing the student wrote can answer for it."""
        part = request.node.stash[PART_KEY]
        session = self.session

        def run(probe: Probe, /, **kwargs: Any) -> Any:
            got = session.finish(part, session.start(part, probe, kwargs, import_student=False))
            request.node.stash[STUDENT_DATA_KEY] = True
            return got

        return run

    @pytest.fixture
    def metric(self, request: pytest.FixtureRequest) -> Callable[..., float]:
        """`metric(value, low=, high=, name=)`: the test earns `metric_credit` of its points
        if it passes (none at or below `low`: it fails), and its feedback states the value,
        the thresholds and the credit. Returns the credit."""
        node = request.node

        def report(value: Any, /, *, low: float, high: float, name: str = "metric") -> float:
            if METRIC_KEY in node.stash:
                raise RuntimeError("a test reports at most one metric")
            score = MetricScore.of(str(name), _as_float(value), low=low, high=high)
            node.stash[METRIC_KEY] = score
            return score.credit

        return report

    @pytest.fixture
    def leaderboard(self, request: pytest.FixtureRequest) -> Callable[..., None]:
        """`leaderboard(name, value, order="desc")`: a column of Gradescope's leaderboard."""
        entries = request.node.stash.setdefault(LEADERBOARD_KEY, [])

        def add(name: str, value: Any, order: LeaderboardOrder = "desc") -> None:
            entries.append(LeaderboardEntry(str(name), _as_float(value), order))

        return add

    @pytest.fixture
    def reference(self, request: pytest.FixtureRequest) -> Callable[..., Any]:
        part = request.node.stash[PART_KEY]
        session = self.session

        def run(probe: Probe, /, **kwargs: Any) -> Any:
            return probe(session.reference(part), **kwargs)

        return run

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run a test that reads student source bounded (`GradingSession.run_source_test`)."""
        if "student_source" not in pyfuncitem.fixturenames or PART_KEY not in pyfuncitem.stash:
            return None
        function = pyfuncitem.obj
        parameters = inspect.signature(function).parameters
        arguments = {
            name: value for name, value in pyfuncitem.funcargs.items() if name in parameters
        }
        self.session.run_source_test(pyfuncitem.stash[PART_KEY], lambda: function(**arguments))
        return True

    # -- reporting --------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if PART_KEY in item.stash and (
            call.when == "call" or (call.when == "setup" and not report.passed)
        ):
            self.records.append(self._record(item, call, report))
        if call.when == "call":
            # A session keeps its items: outputs (up to 64 MiB a tensor) must not pile up.
            item.stash[STUDENT_OUTPUTS_KEY] = []
        return report

    def _record(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> TestResult:
        part = item.stash[PART_KEY]
        points = item.get_closest_marker("points")
        visibility = item.get_closest_marker("visibility")
        outcome: Outcome = "passed"
        message = detail = output = cause = fingerprint = ""
        if report.skipped:
            outcome = "skipped"
            longrepr = report.longrepr
            message = str(longrepr[2]) if isinstance(longrepr, tuple) else "skipped"
        elif report.failed and call.excinfo is not None:
            error = call.excinfo.value
            missing_package = self._missing_package(error)
            if missing_package is not None:
                self._environment_error(missing_package)
                outcome, message, detail = "error", INTERNAL_ERROR_MESSAGE, missing_package
            elif isinstance(error, StudentFailure):
                outcome = "timeout" if error.outcome == "timeout" else "error"
                message, detail, output = error.message, error.detail, error.output.for_feedback()
                submission = self.session.submission
                cause = student_failure_cause(
                    error.outcome,
                    error.message,
                    file_present=part.file in submission.files,
                    source=submission.sources.get(part.id, "missing"),
                    problem=submission.problems.get(part.id),
                )
                hint = error_hint(
                    message,
                    self.session.device,
                    part=part.id,
                    assignment_hints=self.session.assignment.hints,
                    takes_device=takes_device_argument(
                        self.session.reference(part), failing_functions(detail, part.file)
                    ),
                )
                message = f"{message}\n{hint}" if hint else message
            elif isinstance(error, AssertionError):
                outcome, message = "failed", _student_facing_assertion(error)
                cause = WRONG_ANSWER
                outputs = item.stash.get(STUDENT_OUTPUTS_KEY, [])
                fingerprint = combine_fingerprints([_fingerprint(output) for output in outputs])
            elif item.stash.get(STUDENT_DATA_KEY, False):
                outcome, cause, detail = "failed", WRONG_ANSWER, report.longreprtext
                message = UNCHECKABLE_RESULT_MESSAGE.format(
                    error=f"{type(error).__name__}: {str(error)[:200]}"
                )
            else:
                outcome, message = "error", INTERNAL_ERROR_MESSAGE
                detail = report.longreprtext
        credit = 1.0
        metric = item.stash.get(METRIC_KEY, None)
        if metric is not None and outcome == "passed":
            credit, message = metric.credit, metric.feedback()
            if credit <= 0:
                outcome, cause = "failed", WRONG_ANSWER
        entries: list[LeaderboardEntry] = item.stash.get(LEADERBOARD_KEY, [])
        return TestResult(
            name=display_name(item),
            part=part.id,
            outcome=outcome,
            weight=float(points.args[0]) if points else 0.0,
            message=message,
            duration_s=round(report.duration, 4),
            visibility=(
                str(visibility.args[0])
                if visibility
                else self.session.assignment.hidden_visibility_of(part)
            ),
            gated=not opens_gate(item),
            function=getattr(item, "originalname", item.name),
            counts_after=counts_after(item),
            marked_gated=marked_gated(item),
            self_reported_by_use=self_reported_by_use(item),
            judged_in_process=bool(item.get_closest_marker("self_reported"))
            or self_reported_by_use(item),
            skipped_for_device=self._skipped_for_device(item),
            detail=detail,
            output=output,
            cause=cause,
            fingerprint=fingerprint,
            credit=credit,
            leaderboard=tuple(entries),
            metric=metric,
        )
