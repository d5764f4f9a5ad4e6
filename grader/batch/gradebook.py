"""The batch's spreadsheets: gradebook.csv, Canvas's import layout and the regrade diff."""

from __future__ import annotations

import csv
import io
import logging
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.batch.discovery import BatchItem
from grader.batch.metadata import Submitter
from grader.course.manifest import Assignment
from grader.course.policy.apply import PolicyOutcome
from grader.results.atomic import write_text_atomic
from grader.results.model import points
from grader.results.report import Report

log = logging.getLogger(__name__)


REGRADE_DIFF_FILE = "regrade-diff.csv"


STATUS_GRADED = "graded"
STATUS_NO_FILES = "no files"
STATUS_GRADER_ERROR = "grader error"
STATUS_NOT_GRADED = "not graded"
# Spreadsheet programs run cells that start with these as formulas.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Format characters, separators and controls: nothing a reader sees before the formula.
_INVISIBLE = {"Cf", "Cc", "Zs", "Zl", "Zp"}


def report_status(report: Report | None) -> str:
    if report is None:
        return STATUS_NOT_GRADED
    if report.result.grader_error:
        return STATUS_GRADER_ERROR
    if not report.result.submission.files:
        return STATUS_NO_FILES
    return STATUS_GRADED


def _cell(text: str) -> str:
    """A text cell no spreadsheet will run as a formula (student names are student-chosen).

    What counts is the first character a reader would see: invisible ones before it (a
    zero-width space, a byte-order mark, a soft hyphen, a direction mark) are skipped.
    """
    first = next(
        (c for c in text if c in _FORMULA_START or unicodedata.category(c) not in _INVISIBLE),
        "",
    )
    return f"'{text}" if first and first in _FORMULA_START else text


# With a late penalty in the manifest: the total before it, and what was deducted and why
# (`total` is after it).
BEFORE_PENALTY = "total before penalty"
LATE_PENALTY = "late penalty"


def _late_cell(outcome: PolicyOutcome | None, per: str) -> str:
    if outcome is None:
        return ""
    late = outcome.late
    if late is None:
        return "not applied" if outcome.staff_notes else ""
    if not late.percent:
        return "on time"
    return f"-{late.percent:g}% ({late.units} {per}{'' if late.units == 1 else 's'} late)"


def gradebook_rows(
    items: list[BatchItem],
    reports: Mapping[str, Report | None],
    assignment: Assignment,
    late: Mapping[str, PolicyOutcome] | None = None,
) -> list[dict[str, str]]:
    """One row per submission; with `late` (outcomes of the late penalty), `total` is the
    score after it, next to the total before it and the penalty."""
    rows = []
    for item in sorted(items, key=lambda i: i.key):
        report = reports.get(item.key)
        outcome = late.get(item.key) if late is not None else None
        total = outcome.score if outcome else report.result.score if report else None
        row = {
            "student": _cell(item.student),
            "email": _cell(item.email),
            "submission": _cell(item.key),
            "total": points(total) if total is not None else "",
        }
        if assignment.policy.late is not None:
            row[BEFORE_PENALTY] = points(report.result.score) if report else ""
            row[LATE_PENALTY] = _late_cell(outcome, assignment.policy.late.per)
        for part in assignment.parts:
            entry = report.part(part.id) if report else None
            row[part.id] = points(entry.score) if entry else ""
        row["status"] = report_status(report)
        rows.append(row)
    return rows


def write_gradebook(path: Path, rows: list[dict[str, str]], assignment: Assignment) -> None:
    columns = ["student", "email", "submission", "total"]
    if assignment.policy.late is not None:
        columns += [BEFORE_PENALTY, LATE_PENALTY]
    columns += [*assignment.part_ids().split(", "), "status"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, buffer.getvalue())


CANVAS_FILE = "gradebook-canvas.csv"
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "    Points Possible"


# Canvas's importer (GradebookImporter#check_for_non_student_row) takes any row whose first
# cell contains "Points Possible" as the points-possible row: the assignment's maximum, never a
# grade. Matched here in any case and spacing, so near misses are caught too. (It also skips a
# row whose every cell is empty, "Muted" or "Manual Posting...": a scored row never is one, and
# skipping an unscored row leaves the grade alone, as its empty score means to.)
_CANVAS_POINTS_TEXT = re.compile(r"points(\s+)possible", re.IGNORECASE)
# Canvas reads each cell that looks like a number written with "," or "." through its
# decimal_comma_to_period converter: "12,345" and "12.345" are the same SIS id to it.
_CANVAS_NUMBER = re.compile(r"-?[0-9.,]+%?")


@dataclass(frozen=True)
class CanvasGradebook:
    """Canvas's import rows (header, points possible, one row per student) and what staff
    should know before importing them."""

    rows: list[list[str]]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class _CanvasStudent:
    key: str
    person: Submitter
    score: str

    @property
    def name(self) -> str:
        return self.person.name or self.key

    def claims(self) -> dict[tuple[str, str], str]:
        """What Canvas may match this row's student by: (column, value as compared) -> value.

        Canvas looks a row up by its SIS User ID, then its SIS Login ID, then its name, so the
        name only decides for a row with neither id.
        """
        ids = {"SIS User ID": self.person.sid, "SIS Login ID": self.person.email}
        found = {(column, _canvas_identity(v)): v for column, v in ids.items() if v.strip()}
        return found or {("Student", _canvas_identity(self.name)): self.name}


def _canvas_identity(value: str) -> str:
    """`value` as Canvas compares it (after its number converter), casefolded: two claims that
    could name the same student compare equal."""
    value = value.strip()
    if _CANVAS_NUMBER.fullmatch(value):
        *whole, last = re.split(r"[,.]", value)
        value = f"{''.join(whole)}.{last}" if whole else last
    return value.casefold()


def _canvas_student_cell(name: str) -> str:
    """The Student cell for `name`: formula-safe, and never read as the points-possible row."""
    return _CANVAS_POINTS_TEXT.sub(lambda m: m[0].replace(m[1], "_"), _cell(name))


def canvas_gradebook(
    items: list[BatchItem], reports: Mapping[str, Report | None], assignment: Assignment
) -> CanvasGradebook:
    """Canvas's gradebook import layout: one row per student, a group's score on each member.

    Canvas matches rows by ID or SIS ids: Gradescope's `sid` goes in SIS User ID and the email
    in SIS Login ID; the Canvas ID and Section stay empty (Canvas fills them from its roster).
    A submission graded with a grader error, or not graded, leaves the score empty, so the
    import does not overwrite a grade with a wrong 0. So do the rows of two submissions that
    claim the same student (an SIS id, a login, or a name where a row has neither): Canvas
    would keep whichever it reads last. Names are the students' own text: one that Canvas
    would read as its points-possible row gets "_" for its space. Each of these is a warning.
    """
    students = []
    for item in sorted(items, key=lambda i: i.key):
        report = reports.get(item.key)
        status = report_status(report)
        score = points(report.result.score) if report and status != STATUS_GRADER_ERROR else ""
        for person in item.submitters or (Submitter(name=item.key),):
            students.append(_CanvasStudent(item.key, person, score))
    claimants: dict[tuple[str, str], list[_CanvasStudent]] = {}
    for student in students:
        for claim in student.claims():
            claimants.setdefault(claim, []).append(student)
    warnings = []
    shared = set()
    for (column, compared), claiming in claimants.items():
        keys = sorted({student.key for student in claiming})
        if len(keys) > 1:
            shared.add((column, compared))
            value = claiming[0].claims()[column, compared]
            warnings.append(
                f"{column} {value!r} is claimed by {len(keys)} submissions ({', '.join(keys)}): "
                f"their rows in {CANVAS_FILE} have no score (Canvas would keep whichever it "
                "reads last); find out who submitted what and enter these grades by hand"
            )
    header = [*CANVAS_COLUMNS, assignment.title or assignment.id]
    rows = [header, [CANVAS_POINTS_ROW, "", "", "", "", points(assignment.max_score)]]
    for student in students:
        person, name = student.person, _canvas_student_cell(student.name)
        if _CANVAS_POINTS_TEXT.search(student.name):
            warnings.append(
                f"{student.key}: the name {student.name!r} would make Canvas read the row as its "
                f"points-possible row; its Student cell in {CANVAS_FILE} is {name!r}"
            )
        for column, value in (("SIS User ID", person.sid), ("SIS Login ID", person.email)):
            if _cell(value) != value:
                warnings.append(
                    f"{student.key}: its {column} {value!r} starts like a spreadsheet formula, "
                    "so it is written with a leading ' and Canvas will not find the student by it"
                )
        scored = not any(claim in shared for claim in student.claims())
        score = student.score if scored else ""
        rows.append([name, "", _cell(person.sid), _cell(person.email), "", score])
    return CanvasGradebook(rows, tuple(warnings))


def write_canvas_gradebook(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    write_text_atomic(path, buffer.getvalue())


@dataclass(frozen=True)
class ScoreChange:
    key: str
    student: str
    before: float
    after: float
    # Part id -> (before, after), for the parts whose score changed.
    parts: dict[str, tuple[float, float]]

    def line(self) -> str:
        parts = ", ".join(f"{p} {points(a)} -> {points(b)}" for p, (a, b) in self.parts.items())
        change = self.after - self.before
        return (
            f"regraded {self.key}: {points(self.before)} -> {points(self.after)} "
            f"({'+' if change >= 0 else ''}{points(change)})" + (f" [{parts}]" if parts else "")
        )


def score_change(item: BatchItem, before: Report, after: Report) -> ScoreChange:
    def part_scores(report: Report) -> dict[str, float]:
        return {part.id: part.score for part in report.result.parts}

    old, new = part_scores(before), part_scores(after)
    changed = {
        part: (old.get(part, 0.0), new.get(part, 0.0))
        for part in sorted(set(old) | set(new))
        if abs(old.get(part, 0.0) - new.get(part, 0.0)) >= 0.005
    }
    return ScoreChange(item.key, item.student, before.result.score, after.result.score, changed)


def write_regrade_diff(
    path: Path, changes: list[ScoreChange], late: Mapping[str, PolicyOutcome] | None = None
) -> None:
    """One row per submission graded again: its total before and after, and what moved.

    With `late` (outcomes of the late penalty), also the points it deducts from the new
    total and the total after it: the score the gradebook now holds.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["submission", "student", "before", "after", "change", "parts changed"]
    writer.writerow(header if late is None else [*header, "late deduction", "after penalty"])
    for change in sorted(changes, key=lambda c: c.key):
        row = [
            _cell(change.key),
            _cell(change.student),
            points(change.before),
            points(change.after),
            points(change.after - change.before),
            "; ".join(f"{p}: {points(a)} -> {points(b)}" for p, (a, b) in change.parts.items()),
        ]
        if late is not None:
            outcome = late.get(change.key)
            row += [points(outcome.deducted), points(outcome.score)] if outcome else ["", ""]
        writer.writerow(row)
    write_text_atomic(path, buffer.getvalue())
