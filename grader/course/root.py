"""Find the course (the folder holding assignments/) and choose among its assignments.

The course root is, in order: `--course PATH` (the CLI puts it in GRADER_COURSE, so worker
processes agree), the GRADER_COURSE environment variable, the nearest folder at or above
the working directory that holds `assignments/*/assignment.toml`, and last the folder the
grader package sits in (a checkout or an editable install). So an installed grader works
from inside any course folder.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.errors import ConfigError

COURSE_ENV = "GRADER_COURSE"
# The folder holding the grader package: what child processes put on PYTHONPATH.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# A submission folder is looked at this deep and this wide when guessing its assignment.
GUESS_MAX_DEPTH = 3
GUESS_MAX_NAMES = 2000
# How much of a notebook is searched for `part:` marks when its name does not decide.
GUESS_NOTEBOOK_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class AssignmentFiles:
    """What tells one assignment's submissions apart: its file names and its part ids."""

    files: tuple[str, ...]
    part_ids: tuple[str, ...]


class AssignmentChoiceNeeded(ConfigError):
    """Several assignments exist and nothing said which one: the CLI lists `-a` commands."""

    def __init__(self, root: Path, choices: list[str]) -> None:
        self.root = root
        self.choices = choices
        super().__init__(
            f"{len(choices)} assignments found under {root} ({', '.join(choices)}); "
            "choose one with -a/--assignment."
        )


def _holds_assignments(folder: Path) -> bool:
    return any((folder / "assignments").glob("*/assignment.toml"))


def find_course_root(start: Path | None = None, *, package_course: bool = True) -> Path:
    """The course root: GRADER_COURSE, else the nearest course at or above `start` (cwd),
    else (with `package_course`) the course this grader came with."""
    named = os.environ.get(COURSE_ENV)
    if named:
        root = Path(named).expanduser().resolve()
        if not (root / "assignments").is_dir():
            raise ConfigError(
                f"{COURSE_ENV}/--course is {named}, which has no assignments/ folder; name the "
                "folder that holds assignments/ (and, for staff, solutions/)."
            )
        return root
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _holds_assignments(folder):
            return folder
    if package_course and _holds_assignments(PACKAGE_ROOT):
        return PACKAGE_ROOT
    raise ConfigError(
        f"no course found at or above {here}: run the command inside the folder that holds "
        f"assignments/, or name it with --course PATH (or {COURSE_ENV}=PATH)."
    )


def assignments_dir(root: Path | None = None) -> Path:
    return (root or find_course_root()) / "assignments"


def _names_in(submission: Path) -> set[str]:
    """The file names a submission holds (bounded): a folder's, a zip's, or a notebook's own."""
    if submission.is_file():
        if submission.suffix.lower() != ".zip":
            return {submission.name}
        try:
            with zipfile.ZipFile(submission) as archive:
                infos = archive.infolist()[:GUESS_MAX_NAMES]
        except Exception:  # zipfile raises many kinds for a damaged archive: no guess then
            return set()
        return {PurePosixPath(info.filename).name for info in infos if not info.is_dir()}
    names: set[str] = set()
    base_depth = len(submission.parts)
    for current, dirs, files in os.walk(submission):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        if len(Path(current).parts) - base_depth >= GUESS_MAX_DEPTH:
            dirs.clear()
        names.update(files)
        if len(names) >= GUESS_MAX_NAMES:
            break
    return names


def _notebook_heads(submission: Path) -> list[bytes]:
    """The first GUESS_NOTEBOOK_BYTES of the first four notebooks a submission holds.

    Only searched for `part:` marks as bytes: nothing is parsed or decoded here, so a hostile
    notebook costs this process a bounded read and nothing else.
    """
    heads: list[bytes] = []
    try:
        if submission.is_file() and submission.suffix.lower() == ".ipynb":
            with submission.open("rb") as notebook:
                return [notebook.read(GUESS_NOTEBOOK_BYTES)]
        if submission.is_file():
            with zipfile.ZipFile(submission) as archive:
                for info in archive.infolist()[:GUESS_MAX_NAMES]:
                    if info.filename.lower().endswith(".ipynb") and len(heads) < 4:
                        with archive.open(info) as notebook:
                            heads.append(notebook.read(GUESS_NOTEBOOK_BYTES))
            return heads
        base_depth = len(submission.parts)
        for current, dirs, files in os.walk(submission):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            if len(Path(current).parts) - base_depth >= GUESS_MAX_DEPTH:
                dirs.clear()
            for name in sorted(files):
                path = Path(current, name)
                if name.lower().endswith(".ipynb") and len(heads) < 4 and not path.is_symlink():
                    with path.open("rb") as notebook:
                        heads.append(notebook.read(GUESS_NOTEBOOK_BYTES))
    # A damaged archive or member raises many kinds (zlib.error, lzma.LZMAError, a local
    # name that is not UTF-8...): the heads read so far are all the guess gets.
    except Exception:
        pass
    return heads


def _marks_parts(heads: list[bytes], part_ids: tuple[str, ...]) -> bool:
    """Whether any notebook head marks a cell for one of `part_ids` (`part:<id>`, any spacing)."""
    pattern = re.compile(
        rb"part:\s*(?:" + b"|".join(re.escape(part.encode()) for part in part_ids) + rb")\b"
    )
    return any(pattern.search(head) for head in heads)


def guess_from_files(submission: Path, manifests: dict[str, AssignmentFiles]) -> str | None:
    """The one assignment whose files `submission` holds, or None if not exactly one.

    File names shared by several assignments (every walkthrough is `walkthrough.ipynb`) do
    not decide; a notebook then decides by the parts its cells are marked for.
    """
    if not submission.exists():
        return None
    names = _names_in(submission)
    counts: dict[str, int] = {}
    for files in manifests.values():
        for name in set(files.files):
            counts[name] = counts.get(name, 0) + 1
    matching = [
        assignment
        for assignment, files in manifests.items()
        if any(counts[name] == 1 for name in names & set(files.files))
    ]
    if not matching and any(name.lower().endswith(".ipynb") for name in names):
        heads = _notebook_heads(submission)
        matching = [
            assignment
            for assignment, files in manifests.items()
            if files.part_ids and _marks_parts(heads, files.part_ids)
        ]
    if not matching and submission.is_dir() and not submission.is_symlink():
        # A folder holding just the kit's zip, which `grade` and `batch` grade from that zip.
        zips = [
            path
            for path in sorted(submission.iterdir())
            if path.suffix.lower() == ".zip"
            and not path.name.startswith(".")
            and path.is_file()
            and not path.is_symlink()
        ]
        if len(zips) == 1:
            return guess_from_files(zips[0], manifests)
    return matching[0] if len(matching) == 1 else None


def enclosing_assignment(directory: Path, choices: list[str]) -> str | None:
    """The assignment whose folder `directory` is in (a student working inside it), or None."""
    start = directory.resolve()
    for folder in (start, *start.parents):
        if (folder / "assignment.toml").is_file() and folder.name in choices:
            return folder.name
    return None
