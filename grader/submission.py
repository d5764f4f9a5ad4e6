"""Turn what a student uploaded (a folder, a .zip, a notebook) into a clean folder of known files.

Only the assignment's own file names are ever taken; everything else (a conftest.py, a
torch.py, __MACOSX junk) is left behind and listed in the notes. Archives are never
extracted wholesale: each wanted member is read by name with a size cap, so zip slip,
links and zip bombs have nothing to act on.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tokenize
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from grader.assignment import Assignment
from grader.errors import SubmissionError

MAX_SOURCE_BYTES = 1024 * 1024
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 10_000
# An archive holds a notebook and a few sources; far larger ones are refused before opening.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
MAX_WALK_ENTRIES = 20_000
# PEP 263: a coding declaration on line 1 or 2 (group 1 is everything before the name).
CODING_LINE = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)[-\w.]+")
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
class PreparedSubmission:
    directory: Path
    # Known file name -> its clean copy in `directory` (only files that were found and readable).
    files: dict[str, Path]
    # Part id -> "file", "notebook" or "missing".
    sources: dict[str, str]
    # Part id -> why the part cannot run at all (syntax error, not text, too large), for students.
    problems: dict[str, str]
    sha256: str
    notes: tuple[str, ...] = field(default=())


@dataclass
class _Found:
    """Raw bytes of the wanted files, wherever they came from."""

    sources: dict[str, bytes] = field(default_factory=dict)
    notebook: bytes | None = None
    oversized: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def prepare_submission(path: Path, assignment: Assignment, dest: Path) -> PreparedSubmission:
    """Collect the assignment's files from `path` into `dest`; raise SubmissionError if unusable."""
    if not path.exists():
        raise SubmissionError(f"{path} does not exist; pass a folder, a .zip or a notebook.")
    wanted = set(assignment.files)
    if path.is_dir():
        found = _from_folder(path, wanted, assignment.notebook)
    elif path.suffix.lower() == ".zip":
        found = _from_zip(path, wanted, assignment.notebook)
    elif path.suffix.lower() == ".ipynb":
        found = _Found(notebook=_read_capped_file(path, MAX_NOTEBOOK_BYTES))
    elif path.name in wanted:
        found = _from_folder(path.parent, {path.name}, None)
    else:
        raise SubmissionError(
            f"{path.name}: cannot grade this kind of file; pass a folder, a .zip, or a notebook."
        )
    return _materialise(found, assignment, dest)


def _materialise(found: _Found, assignment: Assignment, dest: Path) -> PreparedSubmission:
    dest.mkdir(parents=True, exist_ok=True)
    notes = list(found.notes)
    raw = dict(found.sources)
    sources = {part.id: "file" for part in assignment.parts if part.file in raw}
    if found.notebook is not None:
        from grader.notebook import merge_notebook_parts

        merged = merge_notebook_parts(found.notebook, assignment, raw)
        raw = merged.sources
        sources.update(merged.origin)
        notes.extend(merged.notes)
    files: dict[str, Path] = {}
    problems: dict[str, str] = {}
    digest = hashlib.sha256()
    for part in assignment.parts:
        if part.file in found.oversized:
            problems[part.id] = (
                f"{part.file} is {found.oversized[part.file] / 1024:.0f} KiB, over the "
                f"{MAX_SOURCE_BYTES // 1024} KiB limit for a source file."
            )
            sources[part.id] = "file"
            continue
        if part.file not in raw:
            sources[part.id] = "missing"
            continue
        data = raw[part.file]
        digest.update(part.file.encode() + b"\0" + data + b"\0")
        text, problem = _decode_source(part.file, data)
        if problem:
            problems[part.id] = problem
            continue
        target = dest / part.file
        target.write_text(text, encoding="utf-8")
        files[part.file] = target
        syntax = _syntax_problem(part.file, text)
        if syntax:
            problems[part.id] = syntax
    return PreparedSubmission(
        directory=dest,
        files=files,
        sources=sources,
        problems=problems,
        sha256=digest.hexdigest(),
        notes=tuple(notes),
    )


def _decode_source(name: str, data: bytes) -> tuple[str, str]:
    """Source text, UTF-8 with BOM and CRLF normalised, or a message saying why it is unusable.

    A PEP 263 coding line (`# -*- coding: latin-1 -*-`) is honoured, as Python would, and
    rewritten to utf-8, because the clean copy is stored (and read back) as UTF-8.
    """
    if b"\0" in data:
        return "", f"{name} is not a text file (it contains NUL bytes); submit the .py source."
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "unknown encoding" in str(error.msg):
            return "", f"{name}: {error.msg}; save the file as UTF-8 in your editor."
        encoding = "utf-8"  # no usable coding line: Python reads UTF-8, so do we
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        declared = "" if encoding.startswith("utf-8") else f" (its coding line says {encoding})"
        return "", (
            f"{name} is not valid {encoding.upper()}{declared} at byte {error.start}; save it "
            "as UTF-8 in your editor."
        )
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n", 2)
    for index in range(min(2, len(lines))):
        lines[index] = CODING_LINE.sub(r"\g<1>utf-8", lines[index], count=1)
    return "\n".join(lines), ""


def _syntax_problem(name: str, text: str) -> str:
    """Compile without running: a syntax error is reported once, not once per test."""
    try:
        compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"{name} has a syntax error on line {error.lineno}: {error.msg}."
    except (ValueError, MemoryError, RecursionError) as error:
        return f"{name} cannot be compiled: {type(error).__name__}."
    return ""


def _read_regular(path: Path, cap: int, *, follow: bool = False) -> tuple[bytes, int]:
    """Up to `cap + 1` bytes of a regular file and its size; never a link, FIFO or device."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read(cap + 1), info.st_size


def _read_capped_file(path: Path, cap: int) -> bytes:
    try:
        data, _ = _read_regular(path, cap, follow=True)
    except OSError as error:
        raise SubmissionError(f"{path}: cannot read it ({error}).") from error
    if len(data) > cap:
        raise SubmissionError(f"{path.name} is larger than {cap >> 20} MiB; it cannot be graded.")
    return data


def _from_folder(root: Path, wanted: set[str], notebook: str | None) -> _Found:
    found = _Found()
    candidates: dict[str, list[Path]] = {}
    entries = 0
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in JUNK_DIRS and not d.startswith("."))
        for name in sorted(names):
            entries += 1
            if entries > MAX_WALK_ENTRIES:
                found.notes.append(
                    f"Stopped looking after {MAX_WALK_ENTRIES} files; submit only your own files."
                )
                return _pick(found, candidates, root, notebook)
            if name in wanted or _is_notebook(name, notebook):
                candidates.setdefault(name, []).append(Path(current) / name)
    return _pick(found, candidates, root, notebook)


def _is_notebook(name: str, notebook: str | None) -> bool:
    return notebook is not None and name.endswith(".ipynb")


def _choose_notebook(candidates: dict[str, list[Any]], notebook: str | None, found: _Found) -> None:
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
    found: _Found, candidates: dict[str, list[Path]], root: Path, notebook: str | None
) -> _Found:
    _choose_notebook(candidates, notebook, found)
    for name, paths in candidates.items():
        paths.sort(key=lambda p: (len(p.relative_to(root).parts), str(p)))
        usable = []
        for path in paths:
            if path.is_symlink():
                found.notes.append(f"Ignored {path.relative_to(root)}: links are not followed.")
            elif not path.is_file():
                found.notes.append(f"Ignored {path.relative_to(root)}: not a regular file.")
            else:
                usable.append(path)
        if not usable:
            continue
        chosen = usable[0]
        if len(usable) > 1:
            found.notes.append(
                f"{len(usable)} copies of {name} found; graded {chosen.relative_to(root)}."
            )
        cap = MAX_NOTEBOOK_BYTES if name.endswith(".ipynb") else MAX_SOURCE_BYTES
        try:
            data, size = _read_regular(chosen, cap)
        except OSError as error:
            found.notes.append(f"Could not read {chosen.relative_to(root)}: {error}.")
            continue
        if len(data) > cap:
            if name.endswith(".ipynb"):
                found.notes.append(f"Ignored {name}: larger than {cap >> 20} MiB.")
            else:
                found.oversized[name] = size
        elif name.endswith(".ipynb"):
            found.notebook = data
        else:
            found.sources[name] = data
    return found


def _from_zip(path: Path, wanted: set[str], notebook: str | None) -> _Found:
    found = _Found()
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionError(f"{path.name} is not a regular file; pass a .zip archive.")
    if info.st_size > MAX_ARCHIVE_BYTES:
        raise SubmissionError(
            f"{path.name} is {info.st_size >> 20} MiB (limit {MAX_ARCHIVE_BYTES >> 20} MiB); zip "
            "only your assignment files."
        )
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise SubmissionError(f"{path.name} is not a readable zip file ({error}).") from error
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ARCHIVE_MEMBERS:
            raise SubmissionError(
                f"{path.name} holds {len(members)} entries (limit {MAX_ARCHIVE_MEMBERS}); "
                "zip only your assignment files."
            )
        candidates: dict[str, list[zipfile.ZipInfo]] = {}
        for member in members:
            if member.is_dir():
                continue
            name = member.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
                found.notes.append(f"Refused unsafe archive entry {name!r}.")
                continue
            if stat.S_ISLNK(member.external_attr >> 16):
                found.notes.append(f"Refused link {name!r} in the archive.")
                continue
            if any(p in JUNK_DIRS or p.startswith(".") for p in parts[:-1]):
                continue
            base = parts[-1]
            if base in wanted or _is_notebook(base, notebook):
                candidates.setdefault(base, []).append(member)
        _choose_notebook(candidates, notebook, found)
        for base, options in candidates.items():
            options.sort(key=lambda m: (m.filename.count("/"), m.filename))
            member = options[0]
            if len(options) > 1:
                found.notes.append(
                    f"{len(options)} copies of {base} found; graded {member.filename}."
                )
            cap = MAX_NOTEBOOK_BYTES if base.endswith(".ipynb") else MAX_SOURCE_BYTES
            try:
                with archive.open(member) as handle:
                    data = handle.read(cap + 1)
            except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as error:
                found.notes.append(f"Could not read {member.filename} from the archive: {error}.")
                continue
            if len(data) > cap:
                if base.endswith(".ipynb"):
                    found.notes.append(f"Ignored {base}: larger than {cap >> 20} MiB.")
                else:
                    found.oversized[base] = member.file_size
            elif base.endswith(".ipynb"):
                found.notebook = data
            else:
                found.sources[base] = data
    return found
