"""Folder chains deeper than Python's recursion limit, made and removed without recursing.

`shutil.rmtree` and `os.walk` recurse once per level (Python 3.11), so a test that makes such
a chain removes it with `remove_tree`, or pytest's own clean-up of old temporary folders
would fail on it in a later session.
"""

from __future__ import annotations

import os
from pathlib import Path


def make_chain(root: Path, levels: int, name: str = "d") -> Path:
    """`levels` nested folders under `root`, made with relative paths (no path grows long)."""
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=descriptor)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
    finally:
        os.close(descriptor)
    return root.joinpath(*[name] * levels)


def _tree(root: Path) -> tuple[list[Path], list[Path]]:
    """The folders (parents before children) and the other entries under `root`."""
    folders: list[Path] = []
    others: list[Path] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        folders.append(folder)
        with os.scandir(folder) as scan:
            for entry in scan:
                is_folder = entry.is_dir(follow_symlinks=False)
                (pending if is_folder else others).append(Path(entry.path))
    return folders, others


def files_under(root: Path) -> list[Path]:
    """Every entry under `root` that is not a folder, sorted (links are not followed)."""
    return sorted(_tree(root)[1])


def remove_tree(root: Path) -> None:
    """Remove `root` and everything under it, deepest first."""
    if not root.exists():
        return
    folders, others = _tree(root)
    for path in others:
        path.unlink()
    for folder in reversed(folders):
        folder.rmdir()
