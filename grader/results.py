"""The results model: frozen dataclasses with no I/O. Every output format reads these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["passed", "failed", "error", "timeout", "skipped"]


@dataclass(frozen=True)
class TestResult:
    """One test. `weight` is its share inside its part; `score`/`max_score` are in points."""

    __test__ = False  # a result, not a pytest test class

    name: str
    part: str
    outcome: Outcome
    weight: float
    message: str = ""
    duration_s: float = 0.0
    visibility: str = "after_published"
    # Counts only once a reference-compared test of the same part passes (see scoring.py).
    gated: bool = False
    # For staff only: tracebacks and raw details. Never shown to students.
    detail: str = ""
    # What the student's code printed (capped); student-provided, never decides a score.
    output: str = ""
    score: float = 0.0
    max_score: float = 0.0


@dataclass(frozen=True)
class PartResult:
    id: str
    file: str
    score: float
    max_score: float
    # "file", "notebook" or "missing": where the graded code came from.
    source: str = "file"
    problem: str = ""


@dataclass(frozen=True)
class SubmissionInfo:
    sha256: str
    files: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GradingResult:
    assignment: str
    score: float
    max_score: float
    parts: tuple[PartResult, ...]
    tests: tuple[TestResult, ...]
    seed: int
    device: str
    submission: SubmissionInfo
    duration_s: float
    environment: dict[str, Any] = field(default_factory=dict)
    # Set when the grader itself failed; the scores are then whatever could be salvaged.
    grader_error: str = ""
