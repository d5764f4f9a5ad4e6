"""Walking a folder a student handed in: iterative, links never followed, bounded.

Every reader of a submission folder (grading, Gradescope's upload) walks it through here, so
no folder shape can cost more than MAX_WALK_ENTRIES entries of work or overflow a recursion:
a chain of a thousand nested folders is as cheap as a flat one.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

# Files and folders looked at, at most: a real submission holds a few dozen.
MAX_WALK_ENTRIES = 20_000
# Folders deeper than this under the submission's root are not entered.
MAX_WALK_DEPTH = 32
# Folders that never hold a student's own files.
JUNK_DIRS = {
    "__MACOSX",
    "__pycache__",
    ".git",
    ".ipynb_checkpoints",
    ".venv",
    "venv",
    "node_modules",
}


@dataclass(frozen=True)
class Walked:
    """The files found (links included, as files: the caller decides), and what was skipped."""

    files: tuple[Path, ...]
    # Sentences for the student about what was not searched, if anything.
    notes: tuple[str, ...] = ()


def walk_submission(root: Path) -> Walked:
    """Every file under `root` outside junk and hidden folders, shallow folders first."""
    files: list[Path] = []
    pending = deque([(root, 0)])
    entries = 0
    too_deep = False
    while pending:
        folder, depth = pending.popleft()
        try:
            with os.scandir(folder) as scan:
                children = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in children:
            entries += 1
            if entries > MAX_WALK_ENTRIES:
                return Walked(
                    tuple(files),
                    (
                        f"Stopped looking after {MAX_WALK_ENTRIES:,} files and folders; submit "
                        "only your own files.",
                    ),
                )
            if not _is_folder(entry):
                files.append(Path(entry.path))
            elif entry.name in JUNK_DIRS or entry.name.startswith("."):
                continue
            elif depth + 1 > MAX_WALK_DEPTH:
                too_deep = True
            else:
                pending.append((Path(entry.path), depth + 1))
    notes = (
        (
            f"Folders nested more than {MAX_WALK_DEPTH} levels deep were not searched; keep "
            "your files near the top of what you submit.",
        )
        if too_deep
        else ()
    )
    return Walked(tuple(files), notes)


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
