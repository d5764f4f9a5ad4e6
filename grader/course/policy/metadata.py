"""What one submission's metadata says about time: when it was made, when it was due, and the
earlier submissions. Every field is hostile data, read with bounds and checked types.

Gradescope's `/autograder/submission_metadata.json` (their "Submission Metadata" page,
gradescope-autograders.readthedocs.io/en/latest/submission_metadata/) gives `created_at`,
`assignment.due_date`, `users[]` and `previous_submissions[]` (each with `submission_time`,
`score` and `autograder_error`); the real files also give each user an `assignment` with that
student's own `due_date`, which is where extensions show (gradescope/autograder_samples#60).
Gradescope's export (`submission_metadata.yml`) gives `:created_at:` and the submitters only.

A field that is missing or malformed leaves the policies that need it unapplied: the facts
hold None there and a note for staff says which field and why. Nothing here raises.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from grader.intake.safetext import clean_text

# An ISO 8601 time is about 32 characters; anything much longer is not one.
MAX_TIME_CHARS = 64
MAX_SCORE_CHARS = 32
# Gradescope keeps every earlier submission; no course has this many.
MAX_EARLIER = 10_000
MAX_MEMBERS = 50
MAX_MEMBER_CHARS = 320
MAX_QUOTED_CHARS = 80
# A time outside these years is no course's: it would turn into a penalty of centuries (or
# overflow date arithmetic), so it reads as malformed.
EARLIEST_YEAR = 2000
LATEST_YEAR = 2199


@dataclass(frozen=True)
class EarlierSubmission:
    submitted_at: datetime
    # The score Gradescope recorded; None where missing or not a number.
    score: float | None
    # Gradescope's `autograder_error`: the run failed at no fault of the student.
    grader_error: bool = False


@dataclass(frozen=True)
class SubmissionFacts:
    """The times a policy needs; None where the metadata does not say them readably."""

    submitted_at: datetime | None = None
    # The assignment's due date and each member's own; None: one was present but unreadable.
    due_dates: tuple[datetime, ...] | None = ()
    # The members' e-mails and SIDs (casefolded), matched against the manifest's extensions.
    members: tuple[str, ...] = ()
    # Earlier submissions, oldest first; None: no readable history.
    earlier: tuple[EarlierSubmission, ...] | None = None
    # For staff: each field that was missing or malformed.
    notes: tuple[str, ...] = ()


class _Malformed(ValueError):
    """A field present but not what it should be; its message is the staff note."""


def _quoted(value: object) -> str:
    return clean_text(repr(value)[: MAX_QUOTED_CHARS * 2], MAX_QUOTED_CHARS)


def parse_time(value: object, field: str) -> datetime:
    """An ISO 8601 time with a UTC offset (a YAML time comes parsed); _Malformed otherwise."""
    moment: object = value
    if isinstance(value, str) and len(value) <= MAX_TIME_CHARS:
        text = value.strip()
        if text.endswith(("Z", "z")):  # Python 3.10's parser does not read "Z"
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        raise _Malformed(f"{field} is {_quoted(value)}, not a time with a UTC offset")
    if not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        raise _Malformed(
            f"{field} is {_quoted(value)}, not a time from {EARLIEST_YEAR} to {LATEST_YEAR}"
        )
    return moment


def _score(value: object) -> float | None:
    if isinstance(value, str) and len(value) <= MAX_SCORE_CHARS:
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _member_keys(user: dict[str, Any]) -> list[str]:
    keys = []
    for name in ("email", "sid"):
        value = user.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value.strip() and len(value) <= MAX_MEMBER_CHARS:
            keys.append(value.strip().casefold())
    return keys


def gradescope_facts(data: object) -> SubmissionFacts:
    """The facts in Gradescope's submission_metadata.json, already decoded from JSON."""
    if not isinstance(data, dict):
        return SubmissionFacts(due_dates=None, notes=("the metadata is not a JSON object",))
    notes: list[str] = []
    submitted_at = _time_or_note(data, "created_at", "created_at", notes)
    due_dates: list[datetime] | None = []
    assignment = data.get("assignment")
    if isinstance(assignment, dict) and assignment.get("due_date") is not None:
        due = _time_or_note(assignment, "due_date", "assignment.due_date", notes)
        due_dates = None if due is None else [due]
    members: list[str] = []
    users = data.get("users")
    if isinstance(users, list):
        for index, user in enumerate(users[:MAX_MEMBERS]):
            if not isinstance(user, dict):
                continue
            members += _member_keys(user)
            own = user.get("assignment")
            if isinstance(own, dict) and own.get("due_date") is not None:
                due = _time_or_note(own, "due_date", f"users[{index}].assignment.due_date", notes)
                due_dates = None if due is None or due_dates is None else [*due_dates, due]
    earlier = _earlier(data.get("previous_submissions"), notes)
    return SubmissionFacts(
        submitted_at=submitted_at,
        due_dates=None if due_dates is None else tuple(due_dates),
        members=tuple(members),
        earlier=earlier,
        notes=tuple(notes),
    )


def export_facts(created_at: object, members: Iterable[str]) -> SubmissionFacts:
    """The facts of one submission in Gradescope's export: its time and its submitters."""
    notes: list[str] = []
    submitted_at = _time_or_note({"created_at": created_at}, "created_at", ":created_at", notes)
    keys = [m.strip().casefold() for m in members if m.strip() and len(m) <= MAX_MEMBER_CHARS]
    return SubmissionFacts(submitted_at=submitted_at, members=tuple(keys), notes=tuple(notes))


def _time_or_note(
    mapping: dict[str, Any], key: str, field: str, notes: list[str]
) -> datetime | None:
    if mapping.get(key) is None:
        notes.append(f"{field} is missing")
        return None
    try:
        return parse_time(mapping[key], field)
    except _Malformed as problem:
        notes.append(str(problem))
        return None


def _earlier(value: object, notes: list[str]) -> tuple[EarlierSubmission, ...] | None:
    """The earlier submissions, oldest first; None (with a note) unless every one is readable:
    a limit cannot be counted from part of them."""
    if value is None:
        notes.append("previous_submissions is missing")
        return None
    if not isinstance(value, list) or len(value) > MAX_EARLIER:
        size = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
        notes.append(f"previous_submissions is {size}, not a list of at most {MAX_EARLIER}")
        return None
    found = []
    for index, entry in enumerate(value):
        field = f"previous_submissions[{index}]"
        if not isinstance(entry, dict):
            notes.append(f"{field} is {_quoted(entry)}, not an object")
            return None
        try:
            submitted_at = parse_time(entry.get("submission_time"), f"{field}.submission_time")
        except _Malformed as problem:
            notes.append(str(problem))
            return None
        found.append(
            EarlierSubmission(
                submitted_at=submitted_at,
                score=_score(entry.get("score")),
                grader_error=entry.get("autograder_error") is True,
            )
        )
    return tuple(sorted(found, key=lambda e: e.submitted_at))
