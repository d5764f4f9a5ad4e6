"""GradingResult -> report.json (our own format, documented in GRADER_SPEC.md)."""

from __future__ import annotations

from typing import Any

from grader.results import GradingResult

REPORT_VERSION = 1


def report_dict(result: GradingResult) -> dict[str, Any]:
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
