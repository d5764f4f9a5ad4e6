"""GradingResult -> report.json (our own format, documented in GRADER_SPEC.md)."""

from __future__ import annotations

from typing import Any

from grader.results import GradingResult
from grader.safetext import fit_texts

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
                **({"cause": test.cause} if test.cause else {}),
                **({"fingerprint": test.fingerprint} if test.fingerprint else {}),
                **({"output": test.output} if test.output else {}),
                **({"detail": test.detail} if test.detail else {}),
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
