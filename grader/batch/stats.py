"""The statistics of a batch's staff summary: per part, why tests failed, shared wrong answers."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from grader.batch.discovery import BatchItem
from grader.course.manifest import Assignment, Part
from grader.grading.causes import CAUSES, WRONG_ANSWER, report_test_cause
from grader.intake.safetext import clean_name
from grader.results.report import Report

FULL_MARKS_TOLERANCE = 1e-4
FAILED_OUTCOMES = ("failed", "error", "timeout")
MOST_FAILED_SHOWN = 10
CLUSTERS_SHOWN = 20
# Submissions named in one cluster's row of the page (the JSON lists them all).
CLUSTER_MEMBERS_SHOWN = 30
MESSAGE_CHARS = 240


@dataclass(frozen=True)
class PartStats:
    id: str
    max_score: float
    mean: float
    median: float
    full_marks_rate: float


@dataclass(frozen=True)
class FailedTest:
    """A test that returned wrong answers; its failures count wrong answers only."""

    part: str
    name: str
    failures: int
    message: str  # the most common first line of its message
    message_count: int


@dataclass(frozen=True)
class PartCauses:
    """For one part: how many submissions had at least one test fail for each cause."""

    part: str
    submissions: dict[str, int]


@dataclass(frozen=True)
class MistakeCluster:
    """Submissions whose outputs in one test were the same wrong values."""

    part: str
    name: str
    fingerprint: str
    submissions: tuple[str, ...]
    message: str
    message_count: int
    # Further tests of the part where the same submissions (and only they) shared a wrong
    # answer: one mistake usually fails several parametrised tests alike.
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchSummary:
    assignment: str
    max_score: float
    submissions: int
    # Submissions in the statistics: graded, including those with no usable file (a real 0).
    counted: int
    grader_errors: int
    not_graded: int
    total_mean: float
    total_median: float
    full_marks_rate: float
    parts: tuple[PartStats, ...]
    failed_tests: tuple[FailedTest, ...]
    causes: tuple[PartCauses, ...]
    clusters: tuple[MistakeCluster, ...]
    totals: tuple[float, ...]


def _full(score: float, max_score: float) -> bool:
    return score >= max_score - FULL_MARKS_TOLERANCE


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 4) if values else 0.0


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _first_line(message: str) -> str:
    """Messages quote student text: one clean, short line whatever the report holds."""
    head = message[: MESSAGE_CHARS * 4].strip()
    return clean_name((head.splitlines() or [""])[0], MESSAGE_CHARS)


def summarize(
    assignment: Assignment,
    items: Iterable[BatchItem],
    reports: Mapping[str, Report | None],
) -> BatchSummary:
    """Statistics over every submission that was graded; grader errors are counted apart."""
    keys = [item.key for item in items]
    counted = {
        key: report
        for key in keys
        if (report := reports.get(key)) is not None and not report.result.grader_error
    }
    totals = [report.result.score for report in counted.values()]
    present = [reports.get(key) for key in keys]
    failures = _Failures(assignment)
    for key, report in counted.items():
        failures.add(key, report)
    return BatchSummary(
        assignment=assignment.id,
        max_score=assignment.max_score,
        submissions=len(keys),
        counted=len(counted),
        grader_errors=sum(1 for r in present if r is not None and r.result.grader_error),
        not_graded=sum(1 for r in present if r is None),
        total_mean=_mean(totals),
        total_median=_median(totals),
        full_marks_rate=_rate([_full(t, assignment.max_score) for t in totals]),
        parts=tuple(_part_stats(part, counted.values()) for part in assignment.parts),
        failed_tests=failures.most_failed(),
        causes=tuple(
            PartCauses(part.id, {cause: failures.causes[part.id][cause] for cause in CAUSES})
            for part in assignment.parts
        ),
        clusters=failures.clusters(counted),
        totals=tuple(totals),
    )


def _part_stats(part: Part, reports: Iterable[Report]) -> PartStats:
    scores = [entry.score if (entry := r.part(part.id)) else 0.0 for r in reports]
    return PartStats(
        id=part.id,
        max_score=part.points,
        mean=_mean(scores),
        median=_median(scores),
        full_marks_rate=_rate([_full(s, part.points) for s in scores]),
    )


class _Failures:
    """The failed tests of the counted reports, by cause, by test and by wrong answer."""

    def __init__(self, assignment: Assignment) -> None:
        self.order = {part.id: index for index, part in enumerate(assignment.parts)}
        self.causes: dict[str, Counter[str]] = {part.id: Counter() for part in assignment.parts}
        self.wrong: Counter[tuple[str, str]] = Counter()
        self.messages: dict[tuple[str, str], Counter[str]] = {}
        self.same_wrong: dict[tuple[str, str, str], list[str]] = {}

    def add(self, key: str, report: Report) -> None:
        seen: set[tuple[str, str]] = set()
        for test in report.result.tests:
            if test.outcome not in FAILED_OUTCOMES:
                continue
            part_id, name = clean_name(test.part), test.name
            cause = report_test_cause(test, report.part(part_id))
            if (part_id, cause) not in seen and part_id in self.causes:
                seen.add((part_id, cause))
                self.causes[part_id][cause] += 1
            if cause != WRONG_ANSWER:
                continue
            self.wrong[(part_id, name)] += 1
            line = _first_line(test.message)
            self.messages.setdefault((part_id, name), Counter())[line] += 1
            if test.fingerprint:
                fingerprint = clean_name(test.fingerprint, 64)
                self.same_wrong.setdefault((part_id, name, fingerprint), []).append(key)

    def most_failed(self) -> tuple[FailedTest, ...]:
        ranked = sorted(
            self.wrong.items(), key=lambda kv: (-kv[1], self.order.get(kv[0][0], 99), kv[0][1])
        )
        failed = []
        for (part_id, name), count in ranked[:MOST_FAILED_SHOWN]:
            message, message_count = self.messages[(part_id, name)].most_common(1)[0]
            failed.append(FailedTest(part_id, name, count, message, message_count))
        return tuple(failed)

    def clusters(self, counted: Mapping[str, Report]) -> tuple[MistakeCluster, ...]:
        """Groups of submissions that returned the same wrong values, largest first; one
        group's further tests with the same members merged into its row."""
        clusters = []
        for (part_id, name, fingerprint), members in self.same_wrong.items():
            if len(members) < 2:
                continue
            lines: Counter[str] = Counter(
                _first_line(test.message)
                for member in members
                for test in counted[member].result.tests
                if test.name == name and test.fingerprint == fingerprint
            )
            message, message_count = lines.most_common(1)[0] if lines else ("", 0)
            clusters.append(
                MistakeCluster(
                    part_id, name, fingerprint, tuple(sorted(members)), message, message_count
                )
            )
        clusters.sort(key=lambda c: (-len(c.submissions), self.order.get(c.part, 99), c.name))
        merged: dict[tuple[str, tuple[str, ...]], MistakeCluster] = {}
        for cluster in clusters:
            same = (cluster.part, cluster.submissions)
            if same in merged:
                first = merged[same]
                merged[same] = replace(first, also=(*first.also, cluster.name))
            else:
                merged[same] = cluster
        return tuple(list(merged.values())[:CLUSTERS_SHOWN])


def summary_dict(summary: BatchSummary) -> dict[str, Any]:
    return {"version": 2, **asdict(summary)}
