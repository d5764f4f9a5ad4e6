"""The results model: frozen dataclasses with no I/O. Every output format reads these."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from grader.grading.metrics import MetricScore
from grader.intake.safetext import clean_name, clean_text

Outcome = Literal["passed", "failed", "error", "timeout", "skipped"]

# Bounds on the text a result holds (characters). Much of it is student-chosen (messages
# quoting returned values, printed output, file names), so it is cleaned and capped here,
# where it enters, and no writer downstream can be made slow or unable to encode it.
MAX_MESSAGE_CHARS = 4096
MAX_OUTPUT_CHARS = 8192
MAX_DETAIL_CHARS = 16384
MAX_NAME_CHARS = 300
MAX_NOTE_CHARS = 1000
MAX_NOTES = 50
# A leaderboard entry's name, and the largest magnitude its value may have: Gradescope shows
# both to every student of the course, and a test computes the value from student data.
MAX_LEADERBOARD_NAME_CHARS = 60
MAX_LEADERBOARD_VALUE = 1e9
LeaderboardOrder = Literal["asc", "desc"]


def points(value: float) -> str:
    """Points as people read them: at most two decimals, no trailing zeros (4.29, 1.5, 10).

    A test's weight is often a fraction of its part (30 points over 7 tests); the exact value
    stays in report.json and results.json. Every table, export and message uses this.
    """
    return f"{value:.2f}".rstrip("0").rstrip(".")


def waiting_text(waits_for: str) -> str:
    """How a pass that does not count yet reads, in every output (`grade`, `check`)."""
    return f"passed, not counted yet (waits for {waits_for})"


def _clean(result: object, **limits: int) -> None:
    """Clean and cap the named text fields of a frozen dataclass in place."""
    for name, limit in limits.items():
        object.__setattr__(result, name, clean_text(getattr(result, name), limit))


@dataclass(frozen=True)
class LeaderboardEntry:
    """One column of Gradescope's leaderboard for this submission (`order`: "desc" ranks
    higher values first). Cleaned and bounded here, where it enters."""

    name: str
    value: float
    order: LeaderboardOrder = "desc"

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", clean_name(self.name, MAX_LEADERBOARD_NAME_CHARS))
        value = float(self.value) if math.isfinite(self.value) else 0.0
        value = min(MAX_LEADERBOARD_VALUE, max(-MAX_LEADERBOARD_VALUE, value))
        object.__setattr__(self, "value", value)
        if self.order not in ("asc", "desc"):
            raise ValueError(f"a leaderboard order is 'asc' or 'desc', not {self.order!r}")


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
    # Counts only once a reference-compared test of the same part passes (see scoring.py)...
    gated: bool = False
    # ...one of these test functions, where any are named (the plugin's `counts_after`).
    counts_after: tuple[str, ...] = ()
    # A gating marker (static_rule, self_reported, counts_after) says its verdict proves
    # nothing...
    marked_gated: bool = False
    # ...or, with no marker, how it ran shows it reports on the student side alone (it never
    # asked for `compare`, or compared on inputs not drawn from the hidden seed), which makes
    # it exactly a self_reported test. The other tests are a part's possible gate-openers...
    self_reported_by_use: bool = False
    # Whether its verdict is reached inside the student's process (marked self_reported, or
    # self-reported by use): what code that looks names up at run time could rewrite, so such
    # a part's tests of this kind never count (`grader.intake.integrity`, scoring's `unverifiable`).
    judged_in_process: bool = False
    # ...unless the grader skipped it for the device (`cuda_only` on CPU): it cannot pass
    # there, so it is not waited for. A skip the test itself decides still is.
    skipped_for_device: bool = False
    # The hidden test function this result comes from (one per parameter set).
    function: str = ""
    # Set by scoring on a gated test that passed but does not count yet: the tests it waits
    # for, in words ("'name'", "one of 'a'; 'b'"). Empty on every other test.
    waits_for: str = ""
    # For staff only: tracebacks and raw details. Never shown to students.
    detail: str = ""
    # What the student's code printed (capped); student-provided, never decides a score.
    output: str = ""
    score: float = 0.0
    max_score: float = 0.0
    # Why a failed test failed (a `grader.grading.causes.Cause`), decided on the trusted side.
    cause: str = ""
    # For a wrong answer to a reference comparison: a hash of the student's rounded outputs,
    # equal for submissions that returned the same wrong values.
    fingerprint: str = ""
    # The fraction of its points a passed test earns: below 1 for a metric between its
    # thresholds (grader/grading/metrics.py), 1 for every other test.
    credit: float = 1.0
    # What the test put on the leaderboard (the plugin's `leaderboard` fixture).
    leaderboard: tuple[LeaderboardEntry, ...] = ()
    # The metric the test reported (the plugin's `metric` fixture), whatever its outcome:
    # `validate` reads the reference's and a weak model's figures against the thresholds.
    metric: MetricScore | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", clean_name(self.name, MAX_NAME_CHARS))
        if self.metric is not None:
            named = clean_name(self.metric.name, MAX_LEADERBOARD_NAME_CHARS)
            object.__setattr__(self, "metric", dataclasses.replace(self.metric, name=named))
        _clean(
            self,
            message=MAX_MESSAGE_CHARS,
            detail=MAX_DETAIL_CHARS,
            output=MAX_OUTPUT_CHARS,
            waits_for=MAX_MESSAGE_CHARS,
        )

    @property
    def never_opens_gate(self) -> bool:
        """Whether it can never open its part's gate, so the part does not wait for it."""
        return self.marked_gated or self.self_reported_by_use

    @property
    def waiting(self) -> bool:
        """Whether it passed without counting yet: a gated pass whose gate is still shut."""
        return self.outcome == "passed" and bool(self.waits_for)

    def outcome_text(self) -> str:
        """The outcome in words; a waiting pass says what it waits for."""
        if self.waiting:
            return waiting_text(self.waits_for)
        return self.outcome


@dataclass(frozen=True)
class PartResult:
    id: str
    file: str
    score: float
    max_score: float
    # "file", "notebook" or "missing": where the graded code came from.
    source: str = "file"
    problem: str = ""

    def __post_init__(self) -> None:
        _clean(self, problem=MAX_MESSAGE_CHARS)


@dataclass(frozen=True)
class SubmissionInfo:
    sha256: str
    files: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        files = tuple(clean_name(name, MAX_NAME_CHARS) for name in self.files)
        notes = tuple(clean_text(note, MAX_NOTE_CHARS) for note in self.notes[:MAX_NOTES])
        if len(self.notes) > MAX_NOTES:
            notes += (f"[... {len(self.notes) - MAX_NOTES} more notes cut ...]",)
        object.__setattr__(self, "files", files)
        object.__setattr__(self, "notes", notes)


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

    def __post_init__(self) -> None:
        _clean(self, grader_error=MAX_DETAIL_CHARS)

    @property
    def leaderboard(self) -> tuple[LeaderboardEntry, ...]:
        """The tests' leaderboard entries, the first of each name (in test order)."""
        entries: dict[str, LeaderboardEntry] = {}
        for test in self.tests:
            for entry in test.leaderboard:
                entries.setdefault(entry.name, entry)
        return tuple(entries.values())
