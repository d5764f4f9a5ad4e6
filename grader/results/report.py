"""GradingResult <-> report.json (our own format, documented in docs/report-json.md).

`report_dict` writes a result; `read_report` and `report_from_dict` read one back, checked,
as the same dataclasses, so no reader of report.json digs through untyped JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

from grader.grading.metrics import MetricScore
from grader.intake.safetext import clean_data, fit_texts
from grader.results.model import (
    MAX_DETAIL_CHARS,
    GradingResult,
    LeaderboardEntry,
    LeaderboardOrder,
    Outcome,
    PartResult,
    SubmissionInfo,
    TestResult,
)

REPORT_VERSION = 1
# The tests' messages, printed output and staff details together, in characters. Each is
# capped in the results model already; this bounds their sum however many tests a suite has,
# so report.json stays well under a few MiB.
MAX_REPORT_TEXT_CHARS = 1_000_000
_TEST_TEXT_FIELDS = ("message", "output", "detail")


def report_dict(result: GradingResult) -> dict[str, Any]:
    report = _report_dict(result)
    _fit_test_texts(report["tests"])
    return report


def _fit_test_texts(tests: list[dict[str, Any]]) -> None:
    """Cut the longest texts of all tests to one common length if together they are too long."""
    places = [(test, key) for test in tests for key in _TEST_TEXT_FIELDS if test.get(key)]
    fitted = fit_texts([test[key] for test, key in places], MAX_REPORT_TEXT_CHARS)
    for (test, key), text in zip(places, fitted, strict=True):
        test[key] = text


def _report_dict(result: GradingResult) -> dict[str, Any]:
    return {
        "version": REPORT_VERSION,
        "assignment": result.assignment,
        "score": result.score,
        "max_score": result.max_score,
        "parts": {
            part.id: {
                "score": part.score,
                "max_score": part.max_score,
                "source": part.source,
                **({"problem": part.problem} if part.problem else {}),
            }
            for part in result.parts
        },
        "tests": [
            {
                "name": test.name,
                "part": test.part,
                "score": test.score,
                "max_score": test.max_score,
                "outcome": test.outcome,
                "message": test.message,
                "duration_s": test.duration_s,
                "visibility": test.visibility,
                **({"waits_for": test.waits_for} if test.waits_for else {}),
                **({"cause": test.cause} if test.cause else {}),
                **({"fingerprint": test.fingerprint} if test.fingerprint else {}),
                **({"output": test.output} if test.output else {}),
                **({"detail": test.detail} if test.detail else {}),
                **({"credit": test.credit} if test.credit != 1.0 else {}),
                **(
                    {"leaderboard": [_leaderboard_entry(entry) for entry in test.leaderboard]}
                    if test.leaderboard
                    else {}
                ),
                **({"metric": _metric(test.metric)} if test.metric is not None else {}),
            }
            for test in result.tests
        ],
        "seed": result.seed,
        "device": result.device,
        "environment": result.environment,
        "submission": {
            "sha256": result.submission.sha256,
            "files": list(result.submission.files),
            "notes": list(result.submission.notes),
        },
        "duration_s": result.duration_s,
        "grader_error": result.grader_error or None,
    }


def _leaderboard_entry(entry: LeaderboardEntry) -> dict[str, Any]:
    return {"name": entry.name, "value": entry.value, "order": entry.order}


def _metric(metric: MetricScore) -> dict[str, Any]:
    # A value that is not a finite number (the test's data could not be read as one) is
    # written as null: strict JSON readers refuse NaN.
    value = metric.value if math.isfinite(metric.value) else None
    return {"name": metric.name, "value": value, "low": metric.low, "high": metric.high}


# -- reading ---------------------------------------------------------------------------------

# What a batch adds to the reports it writes: which grader and reference graded them, and
# which entry of the batch folder (grader.batch.discovery.BatchItem.entry).
STAMP_KEYS = ("grader_version", "solutions_sha256", "entry")
# Far above what `report_dict` writes (its texts total MAX_REPORT_TEXT_CHARS).
MAX_REPORT_BYTES = 64 << 20
_OUTCOMES: tuple[str, ...] = get_args(Outcome)


@dataclass(frozen=True)
class Report:
    """A report.json read back: the result it records, and the stamp a batch added to it.

    report.json does not record a test's weight or a part's file: those read as 0.0 and "".
    """

    result: GradingResult
    stamp: dict[str, str] = field(default_factory=dict)

    def part(self, part_id: str) -> PartResult | None:
        return next((part for part in self.result.parts if part.id == part_id), None)


class ReportFormatError(ValueError):
    """A report.json that does not hold what `report_dict` writes."""


def read_report(path: Path) -> Report | None:
    """The report at `path`, checked; None if it is missing, unreadable or not a report."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            return None
        return report_from_dict(json.loads(raw.decode("utf-8")))
    except (OSError, ValueError, RecursionError):
        return None


def report_from_dict(data: object) -> Report:
    """Check decoded report.json data and build its dataclasses, every string in it cleaned.

    Raises ReportFormatError naming the first field that is missing or of the wrong type.
    """
    report = _mapping(clean_data(data, MAX_DETAIL_CHARS), "the report")
    submission = _mapping(report.get("submission"), "submission")
    result = GradingResult(
        assignment=_string(report, "assignment", required=True),
        score=_number(report, "score", required=True),
        max_score=_number(report, "max_score", required=True),
        parts=tuple(
            _part(part_id, _mapping(entry, f"parts.{part_id}"))
            for part_id, entry in _mapping(report.get("parts"), "parts").items()
        ),
        tests=tuple(
            _test(_mapping(test, f"tests[{index}]"))
            for index, test in enumerate(_sequence(report.get("tests"), "tests"))
        ),
        seed=_integer(report, "seed"),
        device=_string(report, "device"),
        submission=SubmissionInfo(
            sha256=_string(submission, "sha256"),
            files=_strings(submission.get("files"), "submission.files"),
            notes=_strings(submission.get("notes", []), "submission.notes"),
        ),
        duration_s=_number(report, "duration_s"),
        environment=_mapping(report.get("environment", {}), "environment"),
        grader_error=_string(report, "grader_error"),
    )
    stamp = {key: _string(report, key) for key in STAMP_KEYS if key in report}
    return Report(result, stamp)


def _part(part_id: str, entry: dict[str, Any]) -> PartResult:
    return PartResult(
        id=part_id,
        file="",
        score=_number(entry, "score", required=True),
        max_score=_number(entry, "max_score"),
        source=_string(entry, "source") or "file",
        problem=_string(entry, "problem"),
    )


def _test(test: dict[str, Any]) -> TestResult:
    outcome = _string(test, "outcome", required=True)
    if outcome not in _OUTCOMES:
        raise ReportFormatError(f"a test's outcome is {outcome!r}, not one of {_OUTCOMES}")
    return TestResult(
        name=_string(test, "name", required=True),
        part=_string(test, "part", required=True),
        outcome=cast(Outcome, outcome),
        weight=0.0,
        message=_string(test, "message"),
        duration_s=_number(test, "duration_s"),
        visibility=_string(test, "visibility") or "after_published",
        detail=_string(test, "detail"),
        output=_string(test, "output"),
        score=_number(test, "score"),
        max_score=_number(test, "max_score"),
        cause=_string(test, "cause"),
        fingerprint=_string(test, "fingerprint"),
        waits_for=_string(test, "waits_for"),
        credit=_number(test, "credit") if "credit" in test else 1.0,
        leaderboard=tuple(
            _read_leaderboard_entry(_mapping(entry, "a test's leaderboard entry"))
            for entry in _sequence(test.get("leaderboard", []), "a test's leaderboard")
        ),
        metric=_read_metric(_mapping(test["metric"], "a test's metric"))
        if "metric" in test
        else None,
    )


def _read_metric(metric: dict[str, Any]) -> MetricScore:
    value = _number(metric, "value") if metric.get("value") is not None else math.nan
    low, high = _number(metric, "low", required=True), _number(metric, "high", required=True)
    try:
        return MetricScore.of(_string(metric, "name"), value, low=low, high=high)
    except ValueError as error:
        raise ReportFormatError(f"a test's metric: {error}") from None


def _read_leaderboard_entry(entry: dict[str, Any]) -> LeaderboardEntry:
    order = _string(entry, "order") or "desc"
    if order not in ("asc", "desc"):
        raise ReportFormatError(f"a leaderboard order is {order!r}, not 'asc' or 'desc'")
    return LeaderboardEntry(
        _string(entry, "name", required=True),
        _number(entry, "value", required=True),
        cast(LeaderboardOrder, order),
    )


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReportFormatError(f"{where} is not an object")
    return value


def _sequence(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ReportFormatError(f"{where} is not a list")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    items = _sequence(value, where)
    if not all(isinstance(item, str) for item in items):
        raise ReportFormatError(f"{where} holds something other than text")
    return tuple(items)


def _string(data: dict[str, Any], key: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ReportFormatError(f"{key} is {type(value).__name__}, not text")
    return value


def _number(data: dict[str, Any], key: str, *, required: bool = False) -> float:
    value = data.get(key)
    if value is None and not required:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReportFormatError(f"{key} is {type(value).__name__}, not a number")
    return float(value)


def _integer(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportFormatError(f"{key} is {type(value).__name__}, not an integer")
    return value
