"""Find the course (the folder holding assignments/) and choose among its assignments.

The course root is, in order: `--course PATH` (the CLI puts it in GRADER_COURSE, so worker
processes agree), the GRADER_COURSE environment variable, the nearest folder at or above
the working directory that holds `assignments/*/assignment.toml`, and last the folder the
grader package sits in (a checkout or an editable install). So an installed grader works
from inside any course folder.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from grader.errors import ConfigError

COURSE_ENV = "GRADER_COURSE"
# The folder holding the grader package: what child processes put on PYTHONPATH.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# A submission folder is looked at this deep and this wide when guessing its assignment.
GUESS_MAX_DEPTH = 3
GUESS_MAX_NAMES = 2000


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


def find_course_root(start: Path | None = None) -> Path:
    """The course root: GRADER_COURSE, else the nearest course at or above `start` (cwd)."""
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
    if _holds_assignments(PACKAGE_ROOT):
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
        except (OSError, zipfile.BadZipFile):
            return set()
        return {Path(info.filename).name for info in infos if not info.is_dir()}
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


def guess_from_files(submission: Path, manifests: dict[str, tuple[str, ...]]) -> str | None:
    """The one assignment whose files (or notebook) `submission` holds, or None if not one."""
    if not submission.exists():
        return None
    names = _names_in(submission)
    matching = [name for name, files in manifests.items() if names & set(files)]
    return matching[0] if len(matching) == 1 else None


def enclosing_assignment(directory: Path, choices: list[str]) -> str | None:
    """The assignment whose folder `directory` is in (a student working inside it), or None."""
    start = directory.resolve()
    for folder in (start, *start.parents):
        if (folder / "assignment.toml").is_file() and folder.name in choices:
            return folder.name
    return None
