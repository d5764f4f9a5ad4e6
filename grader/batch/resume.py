"""Resuming a batch: which reports on disk still stand, and which submissions to grade again."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.batch.discovery import BatchItem
from grader.course.manifest import Assignment
from grader.errors import SubmissionError
from grader.grading.seeds import grading_seed
from grader.intake.submission import prepare_submission
from grader.results.report import Report, read_report

log = logging.getLogger(__name__)


REPORT_NAME = "report.json"
# Per-submission reports live in a folder of their own, so no submission's name can land on
# the batch's own outputs (batch.json, gradebook.csv, summary.*) beside it.
REPORTS_DIR = "reports"
# The report field that names the batch entry a report was written for (`BatchItem.entry`).
ENTRY_KEY = "entry"
# Files under the solutions folder that decide scores: the reference and the hidden suites.
GRADING_SUFFIXES = (".py", ".toml", ".json", ".pt")


def report_path(out_dir: Path, item: BatchItem) -> Path:
    return out_dir / REPORTS_DIR / item.key / REPORT_NAME


def read_state(path: Path) -> dict[str, Any]:
    """The batch.json of the batch being resumed; {} if there is none or it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def submission_fingerprint(path: Path, assignment: Assignment) -> str:
    """The sha256 that `grade` records for this submission ("" if it cannot be read)."""
    with tempfile.TemporaryDirectory(prefix="grader-fingerprint-") as scratch:
        try:
            return prepare_submission(path, assignment, Path(scratch)).sha256
        except SubmissionError:
            return ""


def grading_stamp(assignment: Assignment) -> dict[str, str]:
    """What graded a report: the grader's version and a hash of the solutions and hidden tests.

    A report whose stamp differs was graded by an older grader or reference, so a batch
    grades it again (after a fix) while it keeps reports already stamped as now.
    """
    from grader import __version__

    digest = hashlib.sha256()
    root = assignment.solutions_dir
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in GRADING_SUFFIXES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    manifest = assignment.directory / "assignment.toml"
    if manifest.is_file():
        digest.update(b"manifest\0" + manifest.read_bytes())
    return {"grader_version": __version__, "solutions_sha256": digest.hexdigest()}


def is_up_to_date(
    report: Report | None,
    *,
    assignment: Assignment,
    seed: int,
    device: str,
    fingerprint: str,
    stamp: dict[str, str] | None = None,
) -> bool:
    """Whether a report on disk already grades this very submission the way we would now."""
    if report is None or report.result.grader_error:
        return False
    if stamp is not None and any(report.stamp.get(key) != value for key, value in stamp.items()):
        return False
    result = report.result
    return (
        result.assignment == assignment.id
        and result.seed == seed
        and (device == "auto" or result.device == device)
        and bool(fingerprint)
        and result.submission.sha256 == fingerprint
    )


def batch_seed(state: dict[str, Any], assignment: Assignment, requested: int | None) -> int:
    """--seed, else the seed of the batch being resumed, else a fresh one."""
    if requested is not None:
        return requested
    if state.get("assignment") == assignment.id and isinstance(state.get("seed"), int):
        return int(state["seed"])
    return grading_seed()


@dataclass(frozen=True)
class Plan:
    """What a batch run starts from."""

    # The reports that stand (all but those --force or a change set aside).
    reports: dict[str, Report | None]
    todo: list[BatchItem]
    # The earlier reports of the submissions graded again, for the regrade diff.
    earlier: dict[str, Report]


def plan(
    items: list[BatchItem],
    out_dir: Path,
    assignment: Assignment,
    *,
    seed: int,
    device: str,
    force: bool,
    stamp: dict[str, str],
) -> Plan:
    """Which reports on disk stand, and which submissions to grade (again).

    A report counts only for the entry it was written for: an entry's key can move when
    entries are added or removed (`unique_keys`), and the report under its key may then be
    another entry's. Such an entry is graded, with the earlier report of its own entry, found
    under its former key, as the regrade diff's "before" where there is one.
    """
    reports: dict[str, Report | None] = {}
    todo = []
    earlier: dict[str, Report] = {}
    elsewhere: dict[str, Report] | None = None
    for item in items:
        existing = read_report(report_path(out_dir, item))
        if existing is not None and existing.stamp.get(ENTRY_KEY) != item.entry:
            existing = None
        before = existing
        if before is None:
            if elsewhere is None:
                elsewhere = _reports_by_entry(out_dir)
            before = elsewhere.get(item.entry)
        if before is not None and not before.result.grader_error:
            earlier[item.key] = before
        if force:
            existing = None
        try:
            current = existing is not None and is_up_to_date(
                existing,
                assignment=assignment,
                seed=seed,
                device=device,
                fingerprint=submission_fingerprint(item.path, assignment),
                stamp=stamp,
            )
        except Exception:  # whatever it is, grading it again will tell (and record it)
            log.exception("could not check the report of %s; grading it again", item.key)
            current = False
        if current:
            reports[item.key] = existing
            earlier.pop(item.key, None)
        else:
            todo.append(item)
    return Plan(reports, todo, earlier)


def _reports_by_entry(out_dir: Path) -> dict[str, Report]:
    """Every report under --out/reports that records its entry, by that entry (first key wins)."""
    found: dict[str, Report] = {}
    folder = out_dir / REPORTS_DIR
    if not folder.is_dir():
        return found
    for key in sorted(folder.iterdir()):
        report = read_report(key / REPORT_NAME)
        entry = report.stamp.get(ENTRY_KEY, "") if report is not None else ""
        if report is not None and entry:
            found.setdefault(entry, report)
    return found
