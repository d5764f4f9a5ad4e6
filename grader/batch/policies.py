"""The course's late penalty over a batch: each submission's time from Gradescope's export.

The export carries each student's active submission and its `:created_at:`, not the earlier
submissions nor any due date: the due date is the manifest's `[policy.late] due` (and a
student's own in `[policy.late.extensions]`), and the submission limit and `keep = "best"`,
which need the history, are Gradescope's side only. A report is never rewritten: the penalty
is worked out again from the report and the export at every run, so a resumed batch or a
changed policy never deducts twice.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from grader.batch.discovery import BatchItem
from grader.course.manifest import Assignment
from grader.course.policy.apply import PolicyOutcome, apply_policy
from grader.course.policy.metadata import export_facts
from grader.results.report import Report

log = logging.getLogger(__name__)


def late_outcomes(
    items: list[BatchItem], reports: Mapping[str, Report | None], assignment: Assignment
) -> dict[str, PolicyOutcome]:
    """Submission key -> its outcome under the late penalty ({} when the manifest has none)."""
    if assignment.policy.late is None:
        return {}
    policy = dataclasses.replace(assignment.policy, limit=None, keep="last")
    outcomes = {}
    for item in items:
        report = reports.get(item.key)
        if report is None:
            continue
        members = [value for s in item.submitters for value in (s.email, s.sid)]
        facts = export_facts(item.submitted_at or None, members)
        outcome = apply_policy(report.result, policy, facts)
        for note in outcome.staff_notes:
            log.warning("%s: %s", item.key, note)
        outcomes[item.key] = outcome
    return outcomes


def penalised(
    reports: Mapping[str, Report | None], outcomes: Mapping[str, PolicyOutcome]
) -> dict[str, Report | None]:
    """The reports with each score after the penalty, for the gradebooks."""
    return {
        key: report
        if report is None or key not in outcomes
        else dataclasses.replace(report, result=outcomes[key].result)
        for key, report in reports.items()
    }
