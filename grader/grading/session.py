"""What every test of one hidden-suite run shares, and the only way it reaches student code.

`GradingSession` holds the assignment, the prepared submission and the sandbox: it starts a
probe on the student's side (in the sandbox) and runs the same probe on the reference here
(or reads its stored output), keeps each part's time budget and remembers a part that cannot
run. A test that reads student source runs in a limited child (`run_source_test`). The
pytest plugin (`grader.grading.plugin`) hands it to the fixtures hidden tests use.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader.course.environment import (
    MissingPackage,
    missing_module,
    missing_package_message,
)
from grader.course.manifest import Assignment, Limits, Part
from grader.grading.refcache import ReferenceCache
from grader.grading.suites import (
    PART_BUDGET_MESSAGE,
    TIMEOUTS_PER_PART,
    TIMEOUTS_PER_PART_MESSAGE,
)
from grader.intake.bounded import run_bounded
from grader.intake.source_check import CHECK_MEMORY_BYTES, too_complex
from grader.intake.submission import PreparedSubmission
from grader.rules import StudentSource
from grader.sandbox.client import PendingJob, Sandbox
from grader.sandbox.feedback import StudentFailure, StudentOutput

# Wall-clock bound for one test that reads a student's source (a static rule), which runs in
# a limited child: `ast` work on student text holds the GIL and allocates as it likes, and
# real rules take milliseconds on real files.
SOURCE_TEST_SECONDS = 5.0

Probe = Callable[..., Any]


@dataclass
class GradingSession:
    """What every test of one grading run shares."""

    assignment: Assignment
    submission: PreparedSubmission
    sandbox: Sandbox
    seed: int
    device: str
    # What the sandbox's jobs get (the manifest's, or the test suite's shorter time limit).
    limits: Limits
    # A batch worker's reference outputs, shared by the submissions it grades (same seed).
    reference_cache: ReferenceCache | None = None
    _references: dict[str, types.ModuleType] = field(default_factory=dict)
    _broken: dict[str, StudentFailure] = field(default_factory=dict)
    _timeouts: dict[str, int] = field(default_factory=dict)
    # Wall seconds each part's jobs have taken so far, against `Limits.part_budget`.
    _spent: dict[str, float] = field(default_factory=dict)
    # Parts whose source a test could not analyse within its bounds, with the message: the
    # part's other source tests would only spend the same bound again.
    _too_complex: dict[str, str] = field(default_factory=dict)

    def reference(self, part: Part) -> types.ModuleType:
        """The reference module of `part`, imported once, under a name no student file can take."""
        if part.id not in self._references:
            path = self.assignment.solutions_dir / part.file
            name = f"_reference_{self.assignment.id}_{part.module}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise FileNotFoundError(f"reference solution {path} is missing")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except ImportError as error:
                missing = missing_module(error)
                if missing is None:
                    raise
                message = missing_package_message(missing, self.assignment.id)
                raise MissingPackage(message) from error
            self._references[part.id] = module
        return self._references[part.id]

    def reference_output(self, part: Part, probe: Probe, kwargs: dict[str, Any]) -> Any:
        """`probe` run on the reference, or its stored output for the very same call."""

        def compute() -> Any:
            return probe(self.reference(part), **kwargs)

        if self.reference_cache is None:
            return compute()
        probe_file, name = _probe_location(probe)
        return self.reference_cache.output(
            compute,
            files=(*sorted(self.assignment.solutions_dir.glob("*.py")), probe_file),
            probe=f"{part.id}:{probe_file}:{name}",
            kwargs=kwargs,
            seed=self.seed,
            device=self.device,
        )

    def source(self, part: Part) -> StudentSource:
        self._refuse_if_unrunnable(part)
        if part.id in self._too_complex:
            raise StudentFailure(
                "error",
                f"{self._too_complex[part.id]} (Same problem as in an earlier test of this "
                "part, so this test was not run.)",
            )
        # Every submission file travels along: a rule also holds for the files a part imports.
        files = {
            name: path.read_text(encoding="utf-8", errors="replace")
            for name, path in self.submission.files.items()
            if name != part.file
        }
        files[part.file] = self.submission.files[part.file].read_text(encoding="utf-8")
        return StudentSource(part.file, files, self.submission.imports)

    def run_source_test(self, part: Part, test: Callable[[], None]) -> None:
        """Run a test that reads `part`'s source in a limited child; re-raise its verdict here.

        Every analysis of student text a hidden test makes (the rules of grader/rules.py, or
        an author's own `ast` walk) goes through here, so none can hold the grading process.
        """
        outcome = run_bounded(
            [lambda: _source_test_verdict(test)],
            seconds=SOURCE_TEST_SECONDS,
            memory_bytes=CHECK_MEMORY_BYTES,
        )[0]
        if outcome.failure or not isinstance(outcome.value, dict):
            message = too_complex(part.file, outcome, SOURCE_TEST_SECONDS)
            self._too_complex[part.id] = message
            raise StudentFailure("error", message)
        if "failed" in outcome.value:
            raise AssertionError(outcome.value["failed"])
        if "fail" in outcome.value:
            pytest.fail(outcome.value["fail"], pytrace=False)
        if "skipped" in outcome.value:
            pytest.skip(outcome.value["skipped"])
        if "error" in outcome.value:
            raise RuntimeError(f"the test raised, in its bounded child:\n{outcome.value['error']}")

    def start(
        self, part: Part, probe: Probe, kwargs: dict[str, Any], *, import_student: bool = True
    ) -> PendingJob:
        self._refuse_if_unrunnable(part)
        probe_file, name = _probe_location(probe)
        return self.sandbox.submit(
            module=part.module,
            probe_file=probe_file,
            probe=name,
            kwargs=kwargs,
            timeout_s=self._budget_left(part),
            import_student=import_student,
        )

    def finish(self, part: Part, job: PendingJob) -> Any:
        try:
            return self.sandbox.result(job)
        except StudentFailure as failure:
            if failure.outcome == "timeout":
                self._timeouts[part.id] = self._timeouts.get(part.id, 0) + 1
                if job.timeout_s < self.limits.timeout_s:
                    # Stopped by what was left of the part's budget, not the test's limit.
                    failure = self._over_budget(
                        "was stopped", output=failure.output, at_import=failure.at_import
                    )
            if failure.at_import:
                self._broken[part.id] = failure
            raise failure from None
        finally:
            self._spent[part.id] = self._spent.get(part.id, 0.0) + time.monotonic() - job.started

    def _budget_left(self, part: Part) -> float:
        return self.limits.part_budget - self._spent.get(part.id, 0.0)

    def _over_budget(
        self, what: str, *, output: StudentOutput | None = None, at_import: bool = False
    ) -> StudentFailure:
        message = PART_BUDGET_MESSAGE.format(budget=self.limits.part_budget, what=what)
        return StudentFailure("timeout", message, output=output, at_import=at_import)

    def _refuse_if_unrunnable(self, part: Part) -> None:
        if part.file not in self.submission.files:
            problem = self.submission.problems.get(part.id)
            raise StudentFailure(
                "error",
                problem or f"{part.file} is missing from your submission, so this part scores 0.",
            )
        if part.id in self.submission.problems:
            raise StudentFailure("error", self.submission.problems[part.id])
        if self._budget_left(part) <= 0:
            raise self._over_budget("was not run")
        if part.id in self._broken:
            first = self._broken[part.id]
            raise StudentFailure(
                first.outcome,
                f"{first.message} (Same problem as in an earlier test of this part, so this "
                "test was not run.)",
                at_import=True,
            )
        if self._timeouts.get(part.id, 0) >= TIMEOUTS_PER_PART:
            raise StudentFailure("timeout", TIMEOUTS_PER_PART_MESSAGE)


def _source_test_verdict(test: Callable[[], None]) -> dict[str, str]:
    """What `test` ended with, as JSON: {} (passed), or its failure, skip or error's text."""
    try:
        test()
    except (MemoryError, RecursionError):
        raise  # the bounded child reports these as a source too complex to check
    except AssertionError as error:
        return {"failed": str(error)}
    except pytest.fail.Exception as error:
        return {"fail": str(error.msg)}
    except pytest.skip.Exception as error:
        return {"skipped": str(error.msg)}
    except Exception:
        return {"error": traceback.format_exc()}
    return {}


def _probe_location(probe: Probe) -> tuple[Path, str]:
    """Where the sandbox can find `probe`: it must be a top-level function of its module."""
    module = sys.modules.get(probe.__module__)
    source_file = inspect.getsourcefile(probe)
    if module is None or source_file is None or getattr(module, probe.__name__, None) is not probe:
        raise TypeError(f"probe {probe!r} must be a top-level function of a probes module")
    return Path(source_file), probe.__name__
