"""The manifest's [policy] table: each policy optional, every value checked where it is read.

```toml
[policy]
keep = "best"               # the grade keeps the "last" (default) or "best" graded score

[policy.late]
percent = 10                # deducted per day (or hour) late, as a share of the score earned
per = "day"                 # "day" or "hour"; a started day counts whole
max_percent = 50            # the most ever deducted (default 100)
grace_minutes = 15          # this late still counts as on time (default 0)
due = 2026-03-01T23:59:00-08:00   # for `batch`: Gradescope's export carries no due dates

[policy.late.extensions]    # for `batch`: a student's own due date, by e-mail or SID
"ada@example.edu" = 2026-03-04T23:59:00-08:00

[policy.limit]
graded = 3                  # graded submissions...
per = "day"                 # ...in any 24 hours ("day") or in all ("all")
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from grader.errors import ConfigError

KEEP_CHOICES = ("last", "best")
LATE_UNITS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}
LIMIT_WINDOWS = {"day": timedelta(days=1), "all": None}
# Far beyond any course's needs; bounds what a manifest can make the grader hold.
MAX_EXTENSIONS = 10_000
MAX_GRADED = 10_000
MAX_GRACE_MINUTES = 7 * 24 * 60


@dataclass(frozen=True)
class LatePenalty:
    """A share of the score earned, deducted per started day or hour after the due date."""

    percent: float
    per: str = "day"
    max_percent: float = 100.0
    grace_minutes: float = 0.0
    # Used where the metadata gives no due date (`batch` over Gradescope's export).
    due: datetime | None = None
    # E-mail or SID -> that student's own due date, for where the metadata gives none.
    extensions: tuple[tuple[str, datetime], ...] = ()

    @property
    def unit(self) -> timedelta:
        return LATE_UNITS[self.per]

    @property
    def grace(self) -> timedelta:
        return timedelta(minutes=self.grace_minutes)


@dataclass(frozen=True)
class SubmissionLimit:
    """At most `graded` graded submissions in any 24 hours (`per = "day"`) or in all."""

    graded: int
    per: str = "day"

    @property
    def window(self) -> timedelta | None:
        return LIMIT_WINDOWS[self.per]


@dataclass(frozen=True)
class CoursePolicy:
    """The manifest's [policy]; the default applies none and says nothing to students."""

    keep: str = "last"
    late: LatePenalty | None = None
    limit: SubmissionLimit | None = None
    # Whether the manifest has a [policy] table: students are then told what the grade keeps.
    stated: bool = False


def parse_policy(data: Any, path: Path) -> CoursePolicy:
    """The [policy] table of the manifest at `path`; ConfigError naming the key if wrong."""
    if data is None:
        return CoursePolicy()
    table = _mapping(data, "[policy]", path)
    _only(table, {"keep", "late", "limit"}, "[policy]", path)
    keep = table.get("keep", "last")
    if keep not in KEEP_CHOICES:
        raise ConfigError(f"{path}: [policy] keep = {keep!r}; use one of {KEEP_CHOICES}.")
    late = _late(table["late"], path) if "late" in table else None
    limit = _limit(table["limit"], path) if "limit" in table else None
    return CoursePolicy(keep=keep, late=late, limit=limit, stated=True)


def _late(data: Any, path: Path) -> LatePenalty:
    where = "[policy.late]"
    table = _mapping(data, where, path)
    _only(
        table, {"percent", "per", "max_percent", "grace_minutes", "due", "extensions"}, where, path
    )
    if "percent" not in table:
        raise ConfigError(f"{path}: {where} needs percent (deducted per day or hour late).")
    percent = _number(table["percent"], f"{where} percent", path, low=0.0, high=100.0)
    per = table.get("per", "day")
    if per not in LATE_UNITS:
        raise ConfigError(f"{path}: {where} per = {per!r}; use one of {tuple(LATE_UNITS)}.")
    max_percent = _number(
        table.get("max_percent", 100.0), f"{where} max_percent", path, low=0.0, high=100.0
    )
    grace = _number(
        table.get("grace_minutes", 0.0),
        f"{where} grace_minutes",
        path,
        low=0.0,
        high=MAX_GRACE_MINUTES,
    )
    due = _moment(table["due"], f"{where} due", path) if "due" in table else None
    extensions_table = _mapping(table.get("extensions", {}), f"{where}.extensions", path)
    if len(extensions_table) > MAX_EXTENSIONS:
        raise ConfigError(f"{path}: {where}.extensions has over {MAX_EXTENSIONS} entries.")
    extensions = tuple(
        (str(who).strip().casefold(), _moment(when, f"{where}.extensions {who!r}", path))
        for who, when in extensions_table.items()
    )
    return LatePenalty(
        percent=percent,
        per=per,
        max_percent=max_percent,
        grace_minutes=grace,
        due=due,
        extensions=extensions,
    )


def _limit(data: Any, path: Path) -> SubmissionLimit:
    where = "[policy.limit]"
    table = _mapping(data, where, path)
    _only(table, {"graded", "per"}, where, path)
    graded = table.get("graded")
    if isinstance(graded, bool) or not isinstance(graded, int) or not 1 <= graded <= MAX_GRADED:
        raise ConfigError(
            f"{path}: {where} graded = {graded!r}; use a whole number of graded submissions "
            f"from 1 to {MAX_GRADED}."
        )
    per = table.get("per", "day")
    if per not in LIMIT_WINDOWS:
        raise ConfigError(f"{path}: {where} per = {per!r}; use one of {tuple(LIMIT_WINDOWS)}.")
    return SubmissionLimit(graded=graded, per=per)


def _mapping(data: Any, where: str, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {where} must be a table, got {data!r}.")
    return data


def _only(table: dict[str, Any], known: set[str], where: str, path: Path) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{path}: {where} has unknown keys {unknown}; known: {', '.join(sorted(known))}."
        )


def _number(value: Any, where: str, path: Path, *, low: float, high: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise ConfigError(f"{path}: {where} = {value!r}; use a number from {low:g} to {high:g}.")
    return float(value)


def _moment(value: Any, where: str, path: Path) -> datetime:
    """A TOML date-time with its UTC offset (`2026-03-01T23:59:00-08:00`), or the same as text."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        raise ConfigError(
            f"{path}: {where} = {value!r}; use a date and time with its UTC offset, "
            "such as 2026-03-01T23:59:00-08:00."
        )
    return moment
