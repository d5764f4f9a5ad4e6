"""GradingResult -> Gradescope's results.json (their autograder specification)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grader.intake.safetext import cap_text, clean_text, fit_texts
from grader.results.model import GradingResult, PartResult, TestResult, points

# Gradescope cuts a test's output at 100,000 characters; stay well inside it.
MAX_TEST_OUTPUT = 20_000
MAX_TOP_OUTPUT = 50_000
# All tests' outputs together: results.json stays small whatever the number of tests.
MAX_TOTAL_TEST_OUTPUT = 1_000_000
# Everything we write is plain text, and student-provided text must never be rendered as HTML
# or Markdown, so every output and name is declared "text" (Gradescope's formats: text, html,
# simple_format, md, ansi).
TEXT_FORMATS = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}
GRADER_ERROR_TEXT = (
    "The autograder hit a problem of its own while grading this submission, so some tests "
    "could not run. This is not your fault: course staff have the details. Resubmitting "
    "may help; if it happens again, please contact the course staff."
)


def _test_output(test: TestResult) -> str:
    lines = [test.message] if test.message else []
    if test.outcome == "timeout":
        lines.insert(0, "Timed out.")
    if test.waiting:
        waiting = test.outcome_text()
        lines.insert(0, f"{waiting[0].upper()}{waiting[1:]}.")
    if test.output:
        lines.append(test.output)
    return cap_text("\n\n".join(lines), MAX_TEST_OUTPUT)


# When Gradescope shows a test that is not `visible` to students (its visibility setting).
SHOWN_WHEN = {
    "after_published": "once grades are published",
    "after_due_date": "after the due date",
    "hidden": "to course staff only",
}


def _part_line(part: PartResult, tests: Sequence[TestResult]) -> str:
    """The part's score as far as its students may see it now.

    Gradescope's specification does not hide the top-level output with the tests, so a part
    scored by tests hidden until grades are published shows no score here: its score would
    be theirs (and the parts' sum the total Gradescope hides meanwhile). A missing file's
    part shows its 0: the student knows it already.
    """
    where = {"notebook": " (from your notebook)", "missing": " (file missing)"}.get(part.source, "")
    counted = [t for t in tests if t.part == part.id and t.max_score > 0]
    later = sorted(
        {SHOWN_WHEN.get(t.visibility, "later") for t in counted if t.visibility != "visible"}
    )
    if not later or part.source == "missing":
        return f"{part.id}: {points(part.score)} / {points(part.max_score)}{where}"
    shown = [t for t in counted if t.visibility == "visible"]
    so_far = (
        f"{points(sum(t.score for t in shown))} / {points(sum(t.max_score for t in shown))} "
        "from the tests shown now; the rest"
        if shown
        else "its score"
    )
    return f"{part.id}: graded{where}; {so_far} is shown {' or '.join(later)}"


def _top_output(result: GradingResult) -> str:
    lines = []
    if result.grader_error:
        lines.append(GRADER_ERROR_TEXT)
    for part in result.parts:
        lines.append(_part_line(part, result.tests))
        if part.problem:
            lines.append(f"    {part.problem}")
    lines.extend(result.submission.notes)
    skipped = sum(1 for t in result.tests if t.outcome == "skipped")
    if skipped:
        lines.append(
            f"{skipped} test(s) were skipped (they need a GPU; graded on {result.device})."
        )
    return cap_text("\n".join(lines), MAX_TOP_OUTPUT)


def _grader_error_test() -> dict[str, Any]:
    """A visible, zero-point test saying the grader (not the student) failed."""
    return {
        "name": "Autograder problem",
        "score": 0.0,
        "max_score": 0.0,
        "status": "failed",
        "output": GRADER_ERROR_TEXT,
        "visibility": "visible",
        "tags": ["grader_error"],
    }


def results_dict(result: GradingResult) -> dict[str, Any]:
    part_numbers = {part.id: index for index, part in enumerate(result.parts, start=1)}
    counters: dict[str, int] = {}
    tests: list[dict[str, Any]] = []
    for test in result.tests:
        if test.outcome == "skipped":
            continue
        counters[test.part] = counters.get(test.part, 0) + 1
        passed = test.outcome == "passed" and test.score >= test.max_score
        tests.append(
            {
                "name": test.name,
                "score": test.score,
                "max_score": test.max_score,
                "status": "passed" if passed else "failed",
                "output": _test_output(test),
                "visibility": test.visibility,
                "number": f"{part_numbers.get(test.part, 0)}.{counters[test.part]}",
                "tags": [test.part],
            }
        )
    outputs = fit_texts([test["output"] for test in tests], MAX_TOTAL_TEST_OUTPUT)
    for entry, output in zip(tests, outputs, strict=True):
        entry["output"] = output
    if result.grader_error:
        tests.append(_grader_error_test())
    leaderboard = [
        {"name": entry.name, "value": entry.value, "order": entry.order}
        for entry in result.leaderboard
    ]
    return {
        "score": result.score,
        "execution_time": round(result.duration_s, 3),
        "output": _top_output(result),
        **TEXT_FORMATS,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        **({"leaderboard": leaderboard} if leaderboard else {}),
        "extra_data": {
            "seed": result.seed,
            "device": result.device,
            "environment": result.environment,
            "submission_sha256": result.submission.sha256,
            "grader_error": result.grader_error or None,
        },
    }


def failure_results_dict(detail: str) -> dict[str, Any]:
    """results.json for when grading could not even start (no assignment); details for staff."""
    return {
        "score": 0.0,
        "output": GRADER_ERROR_TEXT,
        **TEXT_FORMATS,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_grader_error_test()],
        "extra_data": {"grader_error": clean_text(detail, MAX_TOP_OUTPUT)},
    }
