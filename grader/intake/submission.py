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
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

# zipfile's own reader of the end records: the central directory walked here (see
# `_readable_relevant_records`) is then the one zipfile would read.
from zipfile import (  # type: ignore[attr-defined]
    _ECD_LOCATION,
    _ECD_OFFSET,
    _ECD_SIGNATURE,
    _ECD_SIZE,
    _EndRecData,
    sizeEndCentDir64,
    sizeEndCentDir64Locator,
    stringEndArchive64,
)

from grader.course.manifest import Assignment
from grader.errors import SubmissionError
from grader.intake.archive import JUNK_DIRS, walk_submission
from grader.intake.bounded import content_key, run_bounded
from grader.intake.integrity import LOOKUP_MESSAGE, MESSAGE, reaching_message
from grader.intake.safetext import clean_name
from grader.intake.source_check import (
    CHECK_MEMORY_BYTES,
    check_sources,
    import_closure,
    too_complex,
)

MAX_SOURCE_BYTES = 1024 * 1024
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 10_000
# An archive holds a notebook and a few sources; far larger ones are refused before opening.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
# Wall-clock bound for reading the notebook in a limited child (grader.intake.bounded): real
# notebooks take milliseconds.
NOTEBOOK_SECONDS = 30.0
# How student names are cut down to compare with the assignment's (see `near_miss_key`).
MAX_NAME_CHARS = 255
_COPY_SUFFIX = re.compile(r"(?:[ _-]*\(\d+\)|[ _-]+copy(?:[ _-]*\d+)?)+$")
_SEPARATORS = re.compile(r"[\s_-]+")
# A zip central-directory header: its signature, fixed size, and the general-purpose flag
# bit that says the entry's name is UTF-8.
_CENTRAL_HEADER = b"PK\x01\x02"
_CENTRAL_HEADER_SIZE = 46
_UTF8_FLAG = 0x800
# The most extra-field bytes an entry may carry: tools write a few dozen (timestamps, zip64
# sizes), and zipfile decodes them in time that grows with their count (9 ms for 64 KiB).
MAX_EXTRA_BYTES = 1024
# Entries that may hold an assignment file, by their names: longer than a path may be
# (PATH_MAX), or past so many copies, they are not taken (1,040 copies of a part file
# 32,000 folders deep cost the grading process 17 s and 300 MB).
MAX_ENTRY_NAME_BYTES = 4096
MAX_RELEVANT_ENTRIES = 100
# Opens every submission digest: a digest of another layout (earlier versions hashed names and
# bytes joined by NUL bytes) can never equal one of this layout.
_DIGEST_FORMAT = b"torch-grader submission digest v2"

_Entry = TypeVar("_Entry")


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
    # File name -> the modules it imports (source_check.module_imports), for every file
    # that compiled: what a part's jobs may import and its source rules read.
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Part id -> why its checks that hidden inputs cannot verify do not count: the code it
    # runs looks names up at run time (grader.intake.integrity.LOOKUP_MESSAGE), for students.
    unverifiable: dict[str, str] = field(default_factory=dict)


@dataclass
class _Found:
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
    problems: dict[str, str] = {}
    notebook_problem = _notebook_problem(found, assignment, raw, sources, notes)
    if notebook_problem:
        notes.append(notebook_problem)
        for part in assignment.parts:
            if part.file not in raw and part.file not in found.oversized:
                problems[part.id] = notebook_problem
    files: dict[str, Path] = {}
    checked: list[tuple[str, str, bytes]] = []
    for part in assignment.parts:
        if part.file in found.oversized:
            problems[part.id] = (
                f"{part.file} is {found.oversized[part.file] / 1024:.0f} KiB, over the "
                f"{MAX_SOURCE_BYTES // 1024} KiB limit for a source file."
            )
            sources[part.id] = "file"
        elif part.file not in raw:
            sources[part.id] = "missing"
            why = found.why_missing(part.file)
            if why:
                problems[part.id] = why
        else:
            checked.append((part.id, part.file, raw[part.file]))
    digest = _submission_digest(found, assignment, raw, sources)
    imports: dict[str, tuple[str, ...]] = {}
    results = check_sources([(name, data) for _, name, data in checked])
    for (part_id, name, _), source in zip(checked, results, strict=True):
        if source.text is not None:
            target = dest / name
            target.write_text(source.text, encoding="utf-8")
            files[name] = target
            imports[name] = source.imports
        if source.problem:
            problems[part_id] = source.problem
    reaches = {name: source.reach for (_, name, _), source in zip(checked, results, strict=True)}
    refused = {name: reach.refused for name, reach in reaches.items()}
    for part_id, problem in _reaching_notes(assignment, imports, refused, MESSAGE).items():
        problems.setdefault(part_id, problem)
    lookups = {name: reach.lookups for name, reach in reaches.items()}
    looking_up = _reaching_notes(assignment, imports, lookups, LOOKUP_MESSAGE)
    return PreparedSubmission(
        directory=dest,
        files=files,
        sources=sources,
        problems=problems,
        sha256=digest,
        notes=tuple(notes),
        imports=imports,
        unverifiable=looking_up,
    )


def _reaching_notes(
    assignment: Assignment,
    imports: dict[str, tuple[str, ...]],
    uses: dict[str, tuple[str, ...]],
    template: str,
) -> dict[str, str]:
    """Part id -> `template` naming the uses of the files it runs (its own, and the
    submission files it imports), for every part, whatever its assignment, that has any."""
    notes = {}
    for part in assignment.parts:
        found = {
            name: list(uses[name])
            for name in import_closure(imports, part.file)
            if uses.get(name) and name in imports
        }
        if found:
            notes[part.id] = reaching_message(found, template=template)
    return notes


def _notebook_problem(
    found: _Found,
    assignment: Assignment,
    raw: dict[str, bytes],
    sources: dict[str, str],
    notes: list[str],
) -> str:
    """Merge the notebook's parts, if there is one; or say why it could not be read."""
    if found.notebook is not None:
        return _merge_notebook(found.notebook, assignment, raw, sources, notes)
    if assignment.notebook in found.unreadable:
        return (
            f"{found.unreadable[assignment.notebook]} Parts without their own .py file could "
            "not be graded from it."
        )
    return ""


def _submission_digest(
    found: _Found, assignment: Assignment, raw: dict[str, bytes], sources: dict[str, str]
) -> str:
    """A sha256 over everything intake hands to grading, each field length-prefixed.

    Per part, in the manifest's order: its id, its file, where it comes from, and its bytes,
    or the size of an oversized file, or why a missing one was not taken; then the notebook's
    bytes. Two submissions with the same digest give the same files to the same parts, so a
    batch may keep a report whose digest is unchanged.
    """
    fields = [_DIGEST_FORMAT, assignment.id.encode()]
    for part in assignment.parts:
        if part.file in found.oversized:
            state, content = b"oversized", str(found.oversized[part.file]).encode()
        elif part.file in raw:
            state, content = sources[part.id].encode(), raw[part.file]
        else:
            state = b"missing"
            content = found.why_missing(part.file).encode("utf-8", "surrogatepass")
        fields += [part.id.encode(), part.file.encode(), state, content]
    notebook_unreadable = found.unreadable.get(assignment.notebook or "", "")
    if found.notebook is not None:
        fields += [b"notebook", found.notebook]
    else:
        fields += [b"no notebook", notebook_unreadable.encode("utf-8", "surrogatepass")]
    digest = hashlib.sha256()
    for value in fields:
        digest.update(len(value).to_bytes(8, "big") + value)
    return digest.hexdigest()


def _merge_notebook(
    notebook: bytes,
    assignment: Assignment,
    raw: dict[str, bytes],
    sources: dict[str, str],
    notes: list[str],
) -> str:
    """Merge the notebook's parts into `raw`, `sources` and `notes`; or say why it could not be.

    Reading a notebook parses its cells, so it runs bounded like any source; any failure
    there costs only the parts that would come from the notebook.
    """
    from grader.notebook import merge_notebook_parts

    def merge() -> dict[str, Any]:
        try:
            merged = merge_notebook_parts(notebook, assignment, raw)
        except SubmissionError as error:
            return {"problem": str(error)}
        except Exception as error:  # any damage in the student's notebook, reported as such
            return {"problem": f"The notebook could not be read ({type(error).__name__})."}
        # Bytes travel back as latin-1 text: one character per byte, exactly.
        return {
            "sources": {name: data.decode("latin-1") for name, data in merged.sources.items()},
            "origin": dict(merged.origin),
            "notes": list(merged.notes),
        }

    read: list[str | bytes] = [notebook, assignment.id, str(assignment.notebook)]
    read += [f"{part.id}: {part.file}" for part in assignment.parts]
    for name, data in sorted(raw.items()):
        read += [name, data]
    (outcome,) = run_bounded(
        [merge],
        seconds=NOTEBOOK_SECONDS,
        memory_bytes=CHECK_MEMORY_BYTES,
        keys=[content_key("notebook merge", *read)],
    )
    value = outcome.value if isinstance(outcome.value, dict) else {}
    if outcome.failure or "problem" in value:
        problem = str(value.get("problem", ""))
        problem = problem or too_complex("The notebook", outcome, NOTEBOOK_SECONDS)
        return f"{problem} Parts without their own .py file could not be graded from it."
    raw.clear()
    raw.update({name: text.encode("latin-1") for name, text in value["sources"].items()})
    sources.update(value["origin"])
    notes.extend(value["notes"])
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


def _walk_files(root: Path, found: _Found) -> Iterator[Path]:
    """Every file under `root` outside junk folders, within the walk's bounds (then a note)."""
    walked = walk_submission(root)
    found.notes.extend(walked.notes)
    return iter(walked.files)


def near_miss_key(name: str) -> str:
    """`name` as students mangle it, undone: case, spaces, `-`, copy suffixes, extra extensions.

    `Two_Layer_Net.py`, `two-layer net.py`, `two_layer_net (1).py`, `two_layer_net copy.py`
    and `two_layer_net.py.txt` all give `two_layer_net.py`.
    """
    lowered = name.strip().lower()
    if lowered.startswith("."):  # hidden files (macOS's ._ copies) are never a student's
        return lowered
    # No file system makes longer names, and _COPY_SUFFIX backtracks in time quadratic in
    # the name: a zip entry may be named with 65,535 bytes of " (1)", 13 s of CPU each.
    if len(lowered) > MAX_NAME_CHARS:
        return lowered
    stem, dot, extension = lowered.partition(".py")
    if not dot or (extension and not re.fullmatch(r"(\.[a-z0-9]{1,8})+", extension)):
        return lowered
    stem = _COPY_SUFFIX.sub("", stem)
    return _SEPARATORS.sub("_", stem).strip("_") + ".py"


def near_misses(names: list[str], wanted: list[str]) -> dict[str, list[str]]:
    """For each wanted name absent from `names`, the names in `names` that nearly match it."""
    loose = {near_miss_key(name): name for name in wanted if name not in names}
    found: dict[str, list[str]] = {}
    for name in names:
        if name not in wanted and near_miss_key(name) in loose:
            found.setdefault(loose[near_miss_key(name)], []).append(name)
    return found


def near_miss_advice(wanted: str, candidates: list[str]) -> str:
    """What to rename, for a missing file with near-miss candidates."""
    if len(candidates) == 1:
        return f"rename {candidates[0]} to {wanted} (the grader looks for that exact name)"
    return (
        f"{', '.join(candidates)} are all named like {wanted}: keep the right one and rename "
        f"it to {wanted}"
    )


def _take_near_misses(
    candidates: dict[str, list[_Entry]],
    near: dict[str, list[_Entry]],
    found: _Found,
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


def _keep(found: _Found, name: str, data: bytes, size: int) -> None:
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
    path: Path, names: list[str], wanted: set[str], found: _Found
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
    members: list[zipfile.ZipInfo], wanted: set[str], notebook: str | None, found: _Found
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
        data = _read_capped_file(path, MAX_ARCHIVE_BYTES)
        kept = _readable_relevant_records(path, data, relevant, unreadable, notes)
        return zipfile.ZipFile(io.BytesIO(kept))
    except SubmissionError:
        raise
    except Exception as error:  # zipfile raises many kinds for a damaged archive
        raise SubmissionError(
            f"{path.name} is not a readable zip file ({type(error).__name__}); zip your files "
            "again (python -m grader submit writes one)."
        ) from error


def _readable_relevant_records(
    path: Path,
    data: bytes,
    relevant: Callable[[str], bool],
    unreadable: list[str],
    notes: list[str],
) -> bytes:
    """`data` with a central directory of only the entries that may hold an assignment file
    and that zipfile can read, each judged alone.

    zipfile reads every record of the central directory when it opens an archive, and one it
    cannot read (an extra field that overruns itself, a version it does not support, a name
    flagged UTF-8 that is not) made the whole archive unreadable: every part 0 for a junk
    notes.txt. It also builds an object per record before the entries can be counted (1.4
    million records: 7 s and 800 MB). So the records are walked here, where zipfile finds
    them (its own end-record reader), counted as they come, and only the relevant ones are
    kept, the shallowest first (as the copies of a file are chosen); a relevant one that
    zipfile cannot read alone goes to `unreadable`, so it costs only the parts that need it.
    """
    start, offset, records = _central_directory(path, data)
    # (depth, name, position, length, flags, raw name, extra-field length)
    found: list[tuple[int, str, int, int, int, bytes, int]] = []
    for position, length in records:
        (flags,) = struct.unpack_from("<H", data, position + 8)
        name_length, extra_length = struct.unpack_from("<HH", data, position + 28)
        name_at = position + _CENTRAL_HEADER_SIZE
        raw_name = data[name_at : name_at + name_length]
        # zipfile cuts a name at a NUL byte (an empty name broke it); no file has one.
        if name_length > MAX_ENTRY_NAME_BYTES or b"\0" in raw_name:
            continue
        name = _entry_name(raw_name, flags).replace("\\", "/")
        if relevant(name.rsplit("/", 1)[-1]):
            found.append((name.count("/"), name, position, length, flags, raw_name, extra_length))
    found.sort(key=lambda entry: entry[:3])
    if len(found) > MAX_RELEVANT_ENTRIES:
        notes.append(
            f"{path.name} holds {len(found)} entries named like assignment files; only the "
            f"{MAX_RELEVANT_ENTRIES} in the fewest folders were looked at."
        )
    kept: list[bytes] = []
    for _, _, position, length, flags, raw_name, extra_length in found[:MAX_RELEVANT_ENTRIES]:
        record = bytearray(data[position : position + length])
        if flags & _UTF8_FLAG and not _is_utf8(raw_name):
            # zipfile then reads the name as cp437, which never fails.
            struct.pack_into("<H", record, 8, flags & ~_UTF8_FLAG)
        # zipfile decodes extra fields record by record: 9 ms for one of 64 KiB.
        if extra_length > MAX_EXTRA_BYTES or not _opens_alone(bytes(record)):
            unreadable.append(_entry_name(raw_name, flags))
            continue
        kept.append(bytes(record))
    directory = b"".join(kept)
    return data[:start] + directory + _end_record(len(kept), len(directory), offset)


def _central_directory(path: Path, data: bytes) -> tuple[int, int, list[tuple[int, int]]]:
    """(start, declared offset, (position, length) of each record) of the archive's central
    directory, found where zipfile finds it (its own end-record reader), counted as walked."""
    end = _EndRecData(io.BytesIO(data))
    if not end:
        raise zipfile.BadZipFile("no end of central directory record")
    size, offset = end[_ECD_SIZE], end[_ECD_OFFSET]
    start = end[_ECD_LOCATION] - size
    if end[_ECD_SIGNATURE] == stringEndArchive64:
        start -= sizeEndCentDir64 + sizeEndCentDir64Locator
    if start < 0 or start + size > len(data):
        raise zipfile.BadZipFile("central directory outside the archive")
    records: list[tuple[int, int]] = []
    position = start
    while position < start + size:
        if len(records) >= MAX_ARCHIVE_MEMBERS:
            raise SubmissionError(
                f"{path.name} holds over {MAX_ARCHIVE_MEMBERS} entries; zip only your "
                "assignment files."
            )
        if data[position : position + 4] != _CENTRAL_HEADER:
            raise zipfile.BadZipFile("bad central directory record")
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, position + 28)
        length = _CENTRAL_HEADER_SIZE + name_length + extra_length + comment_length
        records.append((position, length))
        position += length
    return start, offset, records


def _entry_name(raw_name: bytes, flags: int) -> str:
    """An entry's name as zipfile decodes it, undecodable bytes replaced."""
    return raw_name.decode("utf-8" if flags & _UTF8_FLAG else "cp437", "replace")


def _end_record(entries: int, size: int, offset: int) -> bytes:
    """An end-of-central-directory record, without zip64 (archives are far under 4 GiB)."""
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, size, offset, 0)


def _opens_alone(record: bytes) -> bool:
    """Whether zipfile reads this central-directory record, in an archive of its own."""
    try:
        zipfile.ZipFile(io.BytesIO(record + _end_record(1, len(record), 0))).close()
    except Exception:  # whatever zipfile raises for it, the entry is left out alone
        return False
    return True


def _is_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
