"""Finding the assignment's files in what a student uploaded: a folder or a .zip.

Only the assignment's own file names are taken, each read by name with a size cap; among
several copies the shallowest is graded, a lone renamed notebook or near-miss name stands in
for a missing file (with a note), and anything unreadable costs only the parts that need it.
`grader.intake.submission` turns what is found here into the prepared submission.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from grader.errors import SubmissionError
from grader.intake.archive import JUNK_DIRS, walk_submission
from grader.intake.near_miss import near_miss_advice, near_miss_key
from grader.intake.safetext import clean_name
from grader.intake.zip_directory import readable_relevant_records

MAX_SOURCE_BYTES = 1024 * 1024
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
# An archive holds a notebook and a few sources; far larger ones are refused before opening.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024

_Entry = TypeVar("_Entry")


@dataclass
class FoundFiles:
    """Raw bytes of the wanted files, wherever they came from."""

    sources: dict[str, bytes] = field(default_factory=dict)
    notebook: bytes | None = None
    oversized: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Known file name -> why no near miss was graded in its place (several candidates).
    unresolved: dict[str, str] = field(default_factory=dict)
    # Known file name -> why it could not be read (a damaged archive member, an I/O error).
    unreadable: dict[str, str] = field(default_factory=dict)

    def why_missing(self, name: str) -> str:
        """Why a known file that was not taken is missing ("" when it simply is)."""
        return self.unresolved.get(name) or self.unreadable.get(name, "")


def _read_regular(path: Path, cap: int, *, follow: bool = False) -> tuple[bytes, int]:
    """Up to `cap + 1` bytes of a regular file and its size; never a link, FIFO or device."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read(cap + 1), info.st_size


def read_capped_file(path: Path, cap: int) -> bytes:
    try:
        data, _ = _read_regular(path, cap, follow=True)
    except OSError as error:
        raise SubmissionError(f"{path}: cannot read it ({error}).") from error
    if len(data) > cap:
        raise SubmissionError(f"{path.name} is larger than {cap >> 20} MiB; it cannot be graded.")
    return data


def from_folder(root: Path, wanted: set[str], notebook: str | None) -> FoundFiles:
    found = FoundFiles()
    candidates: dict[str, list[Path]] = {}
    near: dict[str, list[Path]] = {}
    loose = {near_miss_key(name): name for name in wanted}
    for path in _walk_files(root, found):
        if path.name in wanted or _is_notebook(path.name, notebook):
            candidates.setdefault(path.name, []).append(path)
        elif near_miss_key(path.name) in loose:
            near.setdefault(loose[near_miss_key(path.name)], []).append(path)
    _take_near_misses(candidates, near, found, lambda path: _shown(path, root))
    return _pick(found, candidates, root, notebook)


def _shown(path: Path, root: Path) -> str:
    """`path` under `root` for a message: folder names that are not UTF-8 would break JSON."""
    return str(path.relative_to(root)).encode("utf-8", "backslashreplace").decode("utf-8")


def _walk_files(root: Path, found: FoundFiles) -> Iterator[Path]:
    """Every file under `root` outside junk folders, within the walk's bounds (then a note)."""
    walked = walk_submission(root)
    found.notes.extend(walked.notes)
    return iter(walked.files)


def _take_near_misses(
    candidates: dict[str, list[_Entry]],
    near: dict[str, list[_Entry]],
    found: FoundFiles,
    describe: Callable[[_Entry], str],
) -> None:
    """Grade a lone near miss in place of a missing file, with a note; never guess among many."""
    for wanted, entries in sorted(near.items()):
        if wanted in candidates:
            continue
        shown = sorted(describe(entry) for entry in entries)
        if len(entries) == 1:
            candidates[wanted] = entries
            found.notes.append(
                f"{wanted} is missing, so {shown[0]} was graded in its place; "
                f"{near_miss_advice(wanted, shown)} before you submit."
            )
        else:
            # The part's problem says it, on each of its tests: not a note as well.
            found.unresolved[wanted] = (
                f"{wanted} is missing; {', '.join(shown)} are all named like it, so none was "
                f"graded in its place: keep the right one and rename it to {wanted}."
            )


def _is_notebook(name: str, notebook: str | None) -> bool:
    # A hidden notebook (macOS's ._ copy beside a renamed one) would make two to choose from.
    return notebook is not None and name.endswith(".ipynb") and not name.startswith(".")


def _choose_notebook(
    candidates: dict[str, list[Any]], notebook: str | None, found: FoundFiles
) -> None:
    """Keep only the assignment's notebook; failing that, the one other notebook, if just one.

    Students rename notebooks ("walkthrough (1).ipynb", "lab1_final.ipynb"): a lone notebook
    is clearly theirs; among several, guessing could grade the wrong one, so none is.
    """
    others = sorted(name for name in candidates if name.endswith(".ipynb") and name != notebook)
    if notebook is not None and notebook not in candidates and others:
        if len(others) == 1:
            candidates[notebook] = candidates[others[0]]
            found.notes.append(
                f"Graded {others[0]} as the assignment's notebook ({notebook}): it is the only "
                "notebook in the submission."
            )
        else:
            found.notes.append(
                f"Found the notebooks {', '.join(others)} but no {notebook}, so no notebook was "
                f"graded; name the one to grade {notebook}."
            )
    for name in others:
        del candidates[name]


def _pick(
    found: FoundFiles, candidates: dict[str, list[Path]], root: Path, notebook: str | None
) -> FoundFiles:
    _choose_notebook(candidates, notebook, found)
    for name, paths in candidates.items():
        paths.sort(key=lambda p: (len(p.relative_to(root).parts), str(p)))
        usable = []
        for path in paths:
            if path.is_symlink():
                found.notes.append(f"Ignored {_shown(path, root)}: links are not followed.")
            elif not path.is_file():
                found.notes.append(f"Ignored {_shown(path, root)}: not a regular file.")
            else:
                usable.append(path)
        if not usable:
            continue
        chosen = usable[0]
        if len(usable) > 1:
            found.notes.append(
                f"{len(usable)} copies of {name} found; graded {_shown(chosen, root)}."
            )
        try:
            data, size = _read_regular(chosen, _cap(name))
        except OSError as error:
            found.unreadable[name] = (
                f"Could not read {clean_name(_shown(chosen, root))} "
                f"({clean_name(error.strerror or str(error), 200)}); check that it is "
                "a readable file and submit again."
            )
            continue
        _keep(found, name, data, size)
    return found


def _cap(name: str) -> int:
    """How many bytes of a wanted file are read: one more means it is over the limit."""
    return MAX_NOTEBOOK_BYTES if name.endswith(".ipynb") else MAX_SOURCE_BYTES


def _keep(found: FoundFiles, name: str, data: bytes, size: int) -> None:
    """Record a wanted file read with `_cap(name) + 1` bytes at most; `size` is its full size."""
    if len(data) > _cap(name):
        if name.endswith(".ipynb"):
            found.notes.append(f"Ignored {name}: larger than {_cap(name) >> 20} MiB.")
        else:
            found.oversized[name] = size
    elif name.endswith(".ipynb"):
        found.notebook = data
    else:
        found.sources[name] = data


def from_zip(path: Path, wanted: set[str], notebook: str | None) -> FoundFiles:
    found = FoundFiles()
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionError(f"{path.name} is not a regular file; pass a .zip archive.")
    if info.st_size > MAX_ARCHIVE_BYTES:
        raise SubmissionError(
            f"{path.name} is {info.st_size >> 20} MiB (limit {MAX_ARCHIVE_BYTES >> 20} MiB); zip "
            "only your assignment files."
        )
    loose = {near_miss_key(name) for name in wanted}

    def relevant(base: str) -> bool:
        return base in wanted or _is_notebook(base, notebook) or near_miss_key(base) in loose

    unreadable: list[str] = []
    with _open_zip(path, relevant, unreadable, found.notes) as archive:
        members = archive.infolist()
        candidates = _zip_candidates(members, wanted, notebook, found)
        for base, options in candidates.items():
            options.sort(key=lambda m: (m.filename.count("/"), m.filename))
            member = options[0]
            if len(options) > 1:
                found.notes.append(
                    f"{len(options)} copies of {base} found; graded {member.filename}."
                )
            try:
                with archive.open(member) as handle:
                    data = handle.read(_cap(base) + 1)
            # zipfile, zlib, lzma and bz2 raise many kinds for one damaged or odd member:
            # whatever it is, it costs only the parts that need this file.
            except Exception as error:
                reason = str(error) or type(error).__name__
                found.unreadable[base] = _unreadable_member(path, member.filename, reason)
                continue
            _keep(found, base, data, member.file_size)
    _record_unreadable_entries(path, unreadable, wanted, found)
    return found


def _record_unreadable_entries(
    path: Path, names: list[str], wanted: set[str], found: FoundFiles
) -> None:
    """A part whose file's entry zipfile could not read (and was not found elsewhere) gets a
    problem saying so; the other such entries (near misses, notebooks) a note."""
    others = []
    for name in names:
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        if base in wanted and base not in found.sources:
            reason = "its header in the zip is damaged"
            found.unreadable.setdefault(base, _unreadable_member(path, name, reason))
        elif base not in wanted:
            others.append(clean_name(name, 80))
    if others:
        shown = ", ".join(f'"{name}"' for name in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        found.notes.append(
            f"Could not read the archive entries {shown}{more}: their headers are damaged or "
            "use an unusual format. If they hold your work, zip your files again."
        )


def _unreadable_member(path: Path, name: str, reason: str) -> str:
    """What to tell a student whose archive member `name` could not be read, and why."""
    return (
        f"Could not read {clean_name(name)} from {clean_name(path.name)} "
        f"({clean_name(reason, 200)}): "
        "that entry of the zip is damaged or uses an unusual format. Create the zip again "
        "(python -m grader submit writes one) and submit it."
    )


def _zip_candidates(
    members: list[zipfile.ZipInfo], wanted: set[str], notebook: str | None, found: FoundFiles
) -> dict[str, list[zipfile.ZipInfo]]:
    """Wanted name -> the safe entries that may hold it (near misses and notebook resolved)."""
    candidates: dict[str, list[zipfile.ZipInfo]] = {}
    near: dict[str, list[zipfile.ZipInfo]] = {}
    loose = {near_miss_key(name): name for name in wanted}
    for member in members:
        if member.is_dir():
            continue
        name = member.filename.replace("\\", "/")
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
            found.notes.append(f"Refused unsafe archive entry {name!r}.")
        elif stat.S_ISLNK(member.external_attr >> 16):
            found.notes.append(f"Refused link {name!r} in the archive.")
        elif not parts or any(p in JUNK_DIRS or p.startswith(".") for p in parts[:-1]):
            continue
        elif parts[-1] in wanted or _is_notebook(parts[-1], notebook):
            candidates.setdefault(parts[-1], []).append(member)
        elif near_miss_key(parts[-1]) in loose:
            near.setdefault(loose[near_miss_key(parts[-1])], []).append(member)
    _take_near_misses(candidates, near, found, lambda member: member.filename)
    _choose_notebook(candidates, notebook, found)
    return candidates


def _open_zip(
    path: Path, relevant: Callable[[str], bool], unreadable: list[str], notes: list[str]
) -> zipfile.ZipFile:
    """Open the archive with only its `relevant` entries (by base name) that zipfile can read;
    the names of the relevant ones it cannot read go to `unreadable`."""
    try:
        data = read_capped_file(path, MAX_ARCHIVE_BYTES)
        kept = readable_relevant_records(path, data, relevant, unreadable, notes)
        return zipfile.ZipFile(io.BytesIO(kept))
    except SubmissionError:
        raise
    except Exception as error:  # zipfile raises many kinds for a damaged archive
        raise SubmissionError(
            f"{path.name} is not a readable zip file ({type(error).__name__}); zip your files "
            "again (python -m grader submit writes one)."
        ) from error
