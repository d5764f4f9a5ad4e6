"""Finding a batch's submissions: one per folder, .zip or notebook, each with a unique key and
the submitters Gradescope's export names."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.batch.metadata import METADATA_FILE, ExportEntry, Submitter, read_export_metadata
from grader.course.manifest import Assignment
from grader.errors import UsageError
from grader.intake.archive import JUNK_DIRS
from grader.intake.safetext import entry_key, hashed_entry_key

log = logging.getLogger(__name__)


SUBMISSION_SUFFIXES = (".zip", ".ipynb")
# What a batch writes into its --out folder first: a folder holding it is a batch's output.
STATE_FILE = "batch.json"
# How Gradescope names the folder its "Export Submissions" zip unpacks to.
EXPORT_FOLDER = re.compile(r"assignment_\d+_export")


@dataclass(frozen=True)
class BatchItem:
    """One submission under the batch folder."""

    # Unique and stable: the entry's name where that is a safe file name (see `entry_key`);
    # names the submission's folder under --out/reports.
    key: str
    path: Path  # as found, possibly with undecodable bytes (surrogateescape)
    submitters: tuple[Submitter, ...] = ()
    # When Gradescope's export says it was submitted (ISO 8601 text; "" if not given).
    submitted_at: str = ""

    @property
    def entry(self) -> str:
        """The entry's raw name, as hex: recorded in its report, so that a report is only ever
        taken for the entry it was written for, whichever key either has."""
        return os.fsencode(self.path.name).hex()

    @property
    def student(self) -> str:
        return "; ".join(s.name for s in self.submitters if s.name) or self.key

    @property
    def email(self) -> str:
        return "; ".join(s.email for s in self.submitters if s.email)


def _is_export(folder: Path) -> bool:
    """Whether `folder` is an unzipped Gradescope export: named as Gradescope names one (no
    student names their own folder, in an export or a class folder) and holding its
    metadata. A student's upload of a submission_metadata.yml is never taken for one."""
    return EXPORT_FOLDER.fullmatch(folder.name) is not None and (folder / METADATA_FILE).is_file()


def _export_root(root: Path) -> Path:
    """Gradescope's export unzips to one `assignment_..._export` folder: look inside it."""
    if (root / METADATA_FILE).is_file():
        return root
    children = [c for c in root.iterdir() if not c.name.startswith(".")]
    if len(children) == 1 and _is_export(children[0]):
        return children[0]
    return root


def check_submissions_folder(root: Path) -> None:
    """Refuse a batch folder that is not one, before anything else is asked or started."""
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise UsageError(
            f"{root} {what}: pass the folder that holds one folder, .zip or notebook "
            "per student (or Gradescope's unzipped 'Export Submissions' folder)."
        )


def discover_submissions(
    root: Path, assignment: Assignment, *, exclude: Iterable[Path] = ()
) -> list[BatchItem]:
    """One item per student folder, .zip or notebook under `root` (or a Gradescope export)."""
    check_submissions_folder(root)
    root = _export_root(root)
    names = {p.name for p in root.iterdir()}
    if names & set(assignment.files):
        raise UsageError(
            f"{root} holds {', '.join(sorted(names & set(assignment.files)))} itself, so it "
            "looks like one submission; grade it with `python -m grader grade`, or pass the "
            "folder that holds one entry per student."
        )
    metadata = root / METADATA_FILE
    exported = read_export_metadata(metadata) if metadata.is_file() else {}
    skip = {p.resolve() for p in exclude}
    entries = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name in JUNK_DIRS:
            continue
        # Before anything resolves it: a link may loop (resolve() raises) or lead anywhere.
        if entry.is_symlink():
            log.warning("skipping %s: links are not followed", entry)
            continue
        if entry.resolve() in skip:
            continue
        # A folder the export's metadata names is a student's, whatever it holds: its files
        # are what the student uploaded, so an uploaded submission_metadata.yml or batch.json
        # neither stops the class's batch nor leaves the student out of it.
        named = entry.name in exported
        if not named and _is_export(entry):
            raise UsageError(
                f"{entry} is a Gradescope export ({METADATA_FILE}) inside {root}: pass "
                f"{entry} itself, whose folders are the students."
            )
        if not named and entry.is_dir() and (entry / STATE_FILE).is_file():
            log.warning("skipping %s: an earlier batch's output (%s)", entry, STATE_FILE)
            continue
        if entry.is_dir() or (entry.is_file() and entry.suffix.lower() in SUBMISSION_SUFFIXES):
            entries.append(entry)
    if not entries:
        raise UsageError(
            f"no submissions under {root}: expected one folder, .zip or .ipynb per student."
        )
    keys = unique_keys([(entry.name, entry.is_file()) for entry in entries])
    items = []
    for entry, key in zip(entries, keys, strict=True):
        stem = entry.stem if entry.is_file() else entry.name
        found = exported.get(entry.name) or exported.get(stem) or ExportEntry(submitters=())
        items.append(
            BatchItem(
                key=key,
                path=entry,
                submitters=found.submitters,
                submitted_at=found.created_at,
            )
        )
    return items


def unique_keys(entries: list[tuple[str, bool]]) -> list[str]:
    """One key per (directory entry name, is a file): distinct, also when compared casefolded.

    A file's key is its stem (`alice` for `alice.zip`), a folder's its name. Of the entries
    whose keys collide, those on the simplest key move on: to their full names, then to their
    names with a hash of their raw bytes (`hashed_entry_key`), until none collide. What is
    still equal (names built to look like another's hashed key) gets a counter, in the order
    of the raw names. So the same folder always gives the same keys, and no two submissions
    ever share a report.
    """
    names = [name for name, _ in entries]
    choices = [
        (
            entry_key(Path(name).stem if is_file else name),
            entry_key(name),
            hashed_entry_key(name),
        )
        for name, is_file in entries
    ]
    levels = [0] * len(entries)
    while True:
        groups: dict[str, list[int]] = {}
        for index, level in enumerate(levels):
            groups.setdefault(choices[index][level].casefold(), []).append(index)
        colliding = []
        for group in groups.values():
            lowest = min(levels[index] for index in group)
            if len(group) > 1 and lowest < 2:
                # An entry already on its full name keeps it while a stem can move instead.
                colliding += [index for index in group if levels[index] == lowest]
        if not colliding:
            break
        for index in colliding:
            levels[index] += 1
    keys = [choices[index][level] for index, level in enumerate(levels)]
    taken: set[str] = set()
    for index in sorted(range(len(names)), key=lambda i: os.fsencode(names[i])):
        key, count = keys[index], 1
        while key.casefold() in taken:
            count += 1
            key = f"{keys[index]}~{count}"
        keys[index] = key
        taken.add(key.casefold())
    return keys
