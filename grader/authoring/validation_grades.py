"""The grades `validate` runs: the reference, the untouched stubs and weak variants, as a batch.

Each is graded as a submission (copies of its part files, through `grade_submission`), and
all of them share one warm sandbox and one cache of the reference's outputs, as a batch
worker's submissions do: the metric checks grade the reference on several seeds and a weak
model on the same seeds, and the weak model's grade then reuses the reference's outputs
instead of training the reference again.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from grader.course.manifest import Assignment
from grader.grading.grade import GradeSettings, grade_submission, sandbox_settings
from grader.grading.refcache import ReferenceCache
from grader.results.model import GradingResult
from grader.sandbox.client import Sandbox
from grader.sandbox.scratch import scratch_folder


class ValidationGrader:
    """Grades copies of an assignment's files for `validate`; use as a context manager."""

    def __init__(self, assignment: Assignment, *, device: str) -> None:
        self.assignment = assignment
        self.device = device
        self._stack = contextlib.ExitStack()
        self._workdir = Path()
        self._sandbox: Sandbox | None = None
        self._references = ReferenceCache()
        self._grades: dict[tuple[str, int], GradingResult] = {}

    def __enter__(self) -> ValidationGrader:
        self._workdir = self._stack.enter_context(scratch_folder("grader-validate-"))
        settings = sandbox_settings(self.assignment, GradeSettings(device=self.device), self.device)
        self._sandbox = self._stack.enter_context(Sandbox(settings, {}, self._workdir / "sandbox"))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stack.close()

    def grade(self, who: str, files: Mapping[str, Path], *, seed: int) -> GradingResult:
        """Grade `files` (part file name -> the file to copy) as `who`, on grading seed `seed`.

        A `who` graded once on a seed is not graded again: its result is kept.
        """
        if (who, seed) in self._grades:
            return self._grades[(who, seed)]
        folder = self._workdir / "submissions" / f"{len(self._grades)}"
        folder.mkdir(parents=True)
        for name, source in files.items():
            shutil.copy(source, folder / name)
        result = grade_submission(
            folder,
            self.assignment,
            GradeSettings(device=self.device, seed=seed),
            sandbox=self._sandbox,
            reference_cache=self._references,
        )
        self._grades[(who, seed)] = result
        return result

    def part_files(self, folder: Path) -> dict[str, Path]:
        """Every part's file in `folder`, by its name."""
        return {part.file: folder / part.file for part in self.assignment.parts}
