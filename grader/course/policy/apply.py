"""What a graded result becomes under the course's policies: pure functions, no I/O.

`apply_policy(result, policy, facts)` takes what the tests scored, the manifest's [policy] and
the submission's facts (grader.course.policy.metadata), and returns the adjusted result, the lines
students read and the notes staff read. In order:

1. the submission limit: past it, the submission is not graded; its hidden tests' results
   are kept for staff only and the grade keeps an earlier graded score;
2. the late penalty, on a graded submission: a share of the score earned, per started day or
   hour after the latest due date that applies to it (a student's own, for an extension);
3. what the grade keeps: with `keep = "best"`, never less than the best earlier graded score.

A fact a policy needs that the metadata did not give readably leaves that policy unapplied,
with a note for staff: no student loses points to a missing or malformed field. Amounts are
shown to students only where the submission's score is shown to them anyway: a message must
not reveal a total that Gradescope hides until the due date or until publication.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from grader.course.policy.config import CoursePolicy, LatePenalty, SubmissionLimit
from grader.course.policy.metadata import EarlierSubmission, SubmissionFacts
from grader.results.model import GradingResult

# Scores are compared and rounded to this many decimals, as `grade` rounds a total.
SCORE_DECIMALS = 6
CHECK_COMMAND = "python -m grader check"


@dataclass(frozen=True)
class LateDecision:
    due: datetime
    # The due date is a student's own, later than the assignment's (an extension).
    extended: bool
    late_by: timedelta
    units: int
    percent: float
    within_grace: bool = False


@dataclass(frozen=True)
class LimitDecision:
    graded: bool
    # Graded submissions that count against the limit, this one included when graded.
    used: int
    # When the next graded submission is possible (None: per "all", or not yet reached).
    next_graded_at: datetime | None = None


@dataclass(frozen=True)
class PolicyOutcome:
    """The adjusted result and why: what the tests earned, the penalty, what the grade keeps."""

    result: GradingResult
    earned: float
    after_penalty: float
    graded: bool = True
    late: LateDecision | None = None
    limit: LimitDecision | None = None
    # The earlier submission whose score this one's score is (keep, or past the limit).
    kept_from: datetime | None = None
    messages: tuple[str, ...] = ()
    staff_notes: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        return self.result.score

    @property
    def deducted(self) -> float:
        return round(self.earned - self.after_penalty, SCORE_DECIMALS)

    def record(self) -> dict[str, Any]:
        """The outcome as plain data, for staff (results.json's extra_data, report pages)."""
        late = self.late
        limit = self.limit
        return {
            "earned": self.earned,
            "after_late_penalty": self.after_penalty,
            "score": self.score,
            "graded": self.graded,
            "late": None
            if late is None
            else {
                "due": late.due.isoformat(),
                "extended": late.extended,
                "late_by_s": late.late_by.total_seconds(),
                "units": late.units,
                "percent": late.percent,
                "within_grace": late.within_grace,
            },
            "limit": None
            if limit is None
            else {
                "graded": limit.graded,
                "used": limit.used,
                "next_graded_at": limit.next_graded_at.isoformat()
                if limit.next_graded_at
                else None,
            },
            "kept_from": self.kept_from.isoformat() if self.kept_from else None,
            "messages": list(self.messages),
            "staff_notes": list(self.staff_notes),
        }


def apply_policy(
    result: GradingResult, policy: CoursePolicy, facts: SubmissionFacts
) -> PolicyOutcome:
    """`result` under `policy`, given what the metadata says (`facts`)."""
    earned = result.score
    if not policy.stated:
        return PolicyOutcome(result=result, earned=earned, after_penalty=earned)
    notes = list(facts.notes)
    if result.grader_error:
        notes.append("the grader failed on this submission: no policy was applied")
        return PolicyOutcome(
            result=result, earned=earned, after_penalty=earned, staff_notes=tuple(notes)
        )
    shown = score_shown(result)
    zone = facts.submitted_at.tzinfo if facts.submitted_at else None
    earlier = _earlier_graded(facts, policy.limit, result.max_score, notes)
    limit = _limit(facts, policy.limit, notes)
    if limit is not None and not limit.graded and earlier is not None and earlier:
        kept = _kept(earlier, policy.keep)
        withheld = _withheld(result, kept.score if kept.score is not None else 0.0)
        message = _limit_message(policy, limit, kept, zone, shown, result.max_score)
        return PolicyOutcome(
            result=_with_messages(withheld, (message,)),
            earned=earned,
            after_penalty=earned,
            graded=False,
            limit=limit,
            kept_from=kept.submitted_at,
            messages=(message,),
            staff_notes=tuple(notes),
        )
    if limit is not None and not limit.graded:
        notes.append("past the submission limit, but no earlier graded score is readable: graded")
        limit = dataclasses.replace(limit, graded=True)
    messages: list[str] = []
    late = _late(facts, policy.late, notes)
    after = earned
    if late is not None:
        after = round(earned * (1 - late.percent / 100), SCORE_DECIMALS)
        line = _late_message(policy.late, late, zone, earned - after if shown else None)
        if line:
            messages.append(line)
    if limit is not None:
        messages.append(_limit_message(policy, limit, None, zone, shown, result.max_score))
    score, kept_from = after, None
    best = _kept(earlier, "best") if policy.keep == "best" and earlier else None
    if best is not None and best.score is not None and best.score > after:
        score, kept_from = best.score, best.submitted_at
    messages.append(_keep_message(policy.keep, kept_from, best, zone, shown, result.max_score))
    adjusted = dataclasses.replace(result, score=score)
    return PolicyOutcome(
        result=_with_messages(adjusted, tuple(messages)),
        earned=earned,
        after_penalty=after,
        late=late,
        limit=limit,
        kept_from=kept_from,
        messages=tuple(messages),
        staff_notes=tuple(notes),
    )


def score_shown(result: GradingResult) -> bool:
    """Whether Gradescope shows this result's score to the student now: every test that
    carries points is visible."""
    return all(
        test.visibility == "visible"
        for test in result.tests
        if test.max_score > 0 and test.outcome != "skipped"
    )


def late_decision(
    submitted_at: datetime, due_dates: tuple[datetime, ...], late: LatePenalty
) -> LateDecision:
    """How late a submission is against the latest of its due dates, and what it costs."""
    due = max(due_dates)
    late_by = submitted_at - due
    extended = due > min(due_dates)
    if late_by <= timedelta(0):
        return LateDecision(due=due, extended=extended, late_by=timedelta(0), units=0, percent=0)
    if late_by <= late.grace:
        return LateDecision(
            due=due, extended=extended, late_by=late_by, units=0, percent=0, within_grace=True
        )
    units = math.ceil(late_by / late.unit)
    percent = min(units * late.percent, late.max_percent)
    return LateDecision(due=due, extended=extended, late_by=late_by, units=units, percent=percent)


def _late(
    facts: SubmissionFacts, late: LatePenalty | None, notes: list[str]
) -> LateDecision | None:
    if late is None:
        return None
    if facts.submitted_at is None or facts.due_dates is None:
        notes.append("no late penalty: the submission time or a due date is not readable")
        return None
    own = [when for who, when in late.extensions if who in facts.members]
    assignment_due = list(facts.due_dates) or ([late.due] if late.due else [])
    if not assignment_due:
        notes.append("no late penalty: neither the metadata nor [policy.late] due gives a due date")
        return None
    return late_decision(facts.submitted_at, (*assignment_due, *own), late)


def _counted(graded_times: list[datetime], at: datetime, limit: SubmissionLimit) -> list[datetime]:
    """The graded submissions before `at` that count against the limit at `at`."""
    window = limit.window
    return [t for t in graded_times if t < at and (window is None or t > at - window)]


def _replay(
    earlier: tuple[EarlierSubmission, ...], limit: SubmissionLimit | None, before: datetime | None
) -> list[EarlierSubmission]:
    """The earlier submissions that were graded, replayed in order under the limit.

    Only times are needed, so the same metadata always gives the same answer; a submission
    Gradescope marks with `autograder_error` was not the student's doing and never counts.
    """
    graded: list[EarlierSubmission] = []
    for entry in earlier:
        if entry.grader_error or (before is not None and entry.submitted_at >= before):
            continue
        times = [g.submitted_at for g in graded]
        if limit is None or len(_counted(times, entry.submitted_at, limit)) < limit.graded:
            graded.append(entry)
    return graded


def _earlier_graded(
    facts: SubmissionFacts, limit: SubmissionLimit | None, max_score: float, notes: list[str]
) -> list[EarlierSubmission] | None:
    """The earlier graded submissions, each with a readable score; None if any is not."""
    if facts.earlier is None or facts.submitted_at is None:
        return None
    graded = _replay(facts.earlier, limit, facts.submitted_at)
    for entry in graded:
        if entry.score is None or not 0 <= entry.score <= max_score + 10**-SCORE_DECIMALS:
            notes.append(
                f"the earlier submission of {entry.submitted_at.isoformat()} has no readable "
                f"score from 0 to {max_score:g}: no earlier score is kept"
            )
            return None
    return graded


def _limit(
    facts: SubmissionFacts, limit: SubmissionLimit | None, notes: list[str]
) -> LimitDecision | None:
    if limit is None:
        return None
    if facts.submitted_at is None or facts.earlier is None:
        notes.append("no submission limit: the submission time or the earlier ones are unreadable")
        return None
    at = facts.submitted_at
    graded = _replay(facts.earlier, limit, at)
    counted = _counted([g.submitted_at for g in graded], at, limit)
    window = limit.window
    if len(counted) < limit.graded:
        used = len(counted) + 1
        # This one uses the last: say when the window frees one again.
        next_at = None
        if window is not None and used >= limit.graded:
            next_at = min([*counted, at]) + window
        return LimitDecision(graded=True, used=used, next_graded_at=next_at)
    return LimitDecision(
        graded=False,
        used=len(counted),
        next_graded_at=min(counted) + window if window is not None else None,
    )


def _kept(earlier: list[EarlierSubmission], keep: str) -> EarlierSubmission:
    """The earlier graded submission whose score the grade keeps (ties: the latest)."""
    if keep == "best":
        return max(reversed(earlier), key=lambda e: e.score or 0.0)
    return earlier[-1]


def _withheld(result: GradingResult, kept_score: float) -> GradingResult:
    """A submission past the limit: only what every submission is shown stays visible."""
    tests = tuple(
        test if test.visibility == "visible" else dataclasses.replace(test, visibility="hidden")
        for test in result.tests
    )
    return dataclasses.replace(result, tests=tests, score=kept_score)


def _with_messages(result: GradingResult, messages: tuple[str, ...]) -> GradingResult:
    notes = (*messages, *result.submission.notes)
    return dataclasses.replace(
        result, submission=dataclasses.replace(result.submission, notes=notes)
    )


# -- what students read ---------------------------------------------------------------------


def when(moment: datetime, zone: tzinfo | None) -> str:
    """A time as students read it, in the time zone the submission's own time is given in."""
    local = moment.astimezone(zone) if zone is not None else moment
    offset = local.utcoffset() or timedelta(0)
    minutes = round(offset.total_seconds() / 60)
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    suffix = f"UTC{sign}{hours:02d}:{rest:02d}" if minutes else "UTC"
    return f"{local:%Y-%m-%d %H:%M} {suffix}"


def _points(value: float) -> str:
    """A score for people to read: at most 2 decimals, no trailing zeros."""
    return f"{round(value, 2):.2f}".rstrip("0").rstrip(".")


def duration(span: timedelta) -> str:
    """'3 days', '1 hour 5 minutes', 'less than a minute': at most the two largest units."""
    minutes = int(span.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [
        f"{count} {unit}{'' if count == 1 else 's'}"
        for count, unit in ((days, "day"), (hours, "hour"), (minutes, "minute"))
        if count
    ]
    return " ".join(parts[:2]) or "less than a minute"


def _late_message(
    late: LatePenalty | None, decision: LateDecision, zone: tzinfo | None, points: float | None
) -> str:
    if late is None:
        return ""
    which = "your extended due date" if decision.extended else "the due date"
    due = f"{which} ({when(decision.due, zone)})"
    if decision.within_grace:
        return (
            f"Submitted {duration(decision.late_by)} after {due}, within the "
            f"{late.grace_minutes:g}-minute grace period: no late penalty."
        )
    if not decision.units:
        return f"Submitted on time for {due}." if decision.extended else ""
    amount = f" ({_points(points)} points)" if points is not None else ""
    cap = (
        f" (the most ever deducted is {late.max_percent:g}%)"
        if decision.percent < decision.units * late.percent
        else ""
    )
    units = f"{decision.units} {late.per}{'' if decision.units == 1 else 's'}"
    return (
        f"Late: submitted {duration(decision.late_by)} after {due}, which counts as {units} "
        f"late; at {late.percent:g}% per {late.per}, {decision.percent:g}% of this "
        f"submission's score is deducted{amount}{cap}."
    )


def _limit_message(
    policy: CoursePolicy,
    limit: LimitDecision,
    kept: EarlierSubmission | None,
    zone: tzinfo | None,
    shown: bool,
    max_score: float,
) -> str:
    assert policy.limit is not None
    allowed = policy.limit.graded
    span = "in any 24 hours" if policy.limit.per == "day" else "for this assignment"
    if limit.graded:
        line = f"This is graded submission {limit.used} of the {allowed} you get {span}."
        if limit.next_graded_at is not None:
            line += (
                f" Your next graded submission is possible from {when(limit.next_graded_at, zone)}."
            )
        elif limit.used >= allowed:
            line += " It is your last graded one."
        return line
    assert kept is not None
    score = (
        f" ({_points(kept.score)} / {_points(max_score)})"
        if shown and kept.score is not None
        else ""
    )
    which = (
        "the best score of your graded submissions"
        if policy.keep == "best"
        else ("the score of your last graded submission")
    )
    nxt = (
        f"Your next graded submission is possible from {when(limit.next_graded_at, zone)}."
        if limit.next_graded_at is not None
        else "No further submission will be graded."
    )
    return (
        f"Not graded: you have made the {allowed} graded submissions you get {span}. This "
        f"submission's hidden test results are not shown and do not count: your grade keeps "
        f"{which}{score}, from your submission of {when(kept.submitted_at, zone)}. {nxt} "
        f"Meanwhile, `{CHECK_COMMAND}` runs the public tests on your own machine."
    )


def _keep_message(
    keep: str,
    kept_from: datetime | None,
    best: EarlierSubmission | None,
    zone: tzinfo | None,
    shown: bool,
    max_score: float,
) -> str:
    if keep == "last":
        return "Your grade is the score of your last graded submission: this one."
    line = (
        "Your grade is the best score of your graded submissions: a lower score does not lower it."
    )
    if shown and kept_from is not None and best is not None and best.score is not None:
        line += (
            f" Your best so far, {_points(best.score)} / {_points(max_score)}, from your "
            f"submission of {when(kept_from, zone)}, is kept."
        )
    return line
