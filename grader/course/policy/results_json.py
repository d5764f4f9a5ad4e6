"""A policy outcome in Gradescope's results.json (their "Autograder Specifications" page,
gradescope-autograders.readthedocs.io/en/latest/specs/).

The top-level `score` overrides the tests' sum, so it carries the adjusted score while each
test keeps what it scored; `extra_data.policy` records the decision for staff. A submission
past the limit shows no part scores: its top-level output is the policy's message and what is
wrong with its files, and its hidden tests are `hidden` (course staff only).
"""

from __future__ import annotations

from typing import Any

from grader.course.policy.apply import PolicyOutcome
from grader.intake.safetext import cap_text
from grader.results.gradescope import MAX_TOP_OUTPUT


def add_policy(data: dict[str, Any], outcome: PolicyOutcome) -> dict[str, Any]:
    """`data` (results_dict of `outcome.result`) with the outcome's record and, for a
    submission that was not graded, a top-level output without scores."""
    data.setdefault("extra_data", {})["policy"] = outcome.record()
    if not outcome.graded:
        result = outcome.result
        problems = [
            f"{part.id}: {part.problem or 'file missing'}"
            for part in result.parts
            if part.problem or part.source == "missing"
        ]
        others = result.submission.notes[len(outcome.messages) :]
        data["output"] = cap_text(
            "\n".join((*outcome.messages, *problems, *others)), MAX_TOP_OUTPUT
        )
    return data
