"""Turn what a student uploaded (a folder, a .zip, a notebook) into a clean folder of known files.

Only the assignment's own file names are ever taken; everything else (a conftest.py, a
torch.py, __MACOSX junk) is left behind and listed in the notes. Archives are never
extracted wholesale: each wanted member is read by name with a size cap, so zip slip,
links and zip bombs have nothing to act on.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course.manifest import Assignment
from grader.errors import SubmissionError
from grader.intake.bounded import content_key, run_bounded
from grader.intake.collect import (
    MAX_NOTEBOOK_BYTES,
    MAX_SOURCE_BYTES,
    FoundFiles,
    from_folder,
    from_zip,
    read_capped_file,
)
from grader.intake.integrity import LOOKUP_MESSAGE, MESSAGE, reaching_message
from grader.intake.source_check import (
    CHECK_MEMORY_BYTES,
    check_sources,
    import_closure,
    too_complex,
)
from grader.intake.upload import choose_from, ignored_beside_loose_files, survey_upload
from grader.notebook.parts import merge_notebook_parts

# Wall-clock bound for reading the notebook in a limited child (grader.intake.bounded): real
# notebooks take milliseconds.
NOTEBOOK_SECONDS = 30.0
# Opens every submission digest: a digest of another layout (earlier versions hashed names and
# bytes joined by NUL bytes) can never equal one of this layout.
_DIGEST_FORMAT = b"torch-grader submission digest v2"


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


def prepare_submission(path: Path, assignment: Assignment, dest: Path) -> PreparedSubmission:
    """Collect the assignment's files from `path` into `dest`; raise SubmissionError if unusable."""
    if not path.exists():
        raise SubmissionError(f"{path} does not exist; pass a folder, a .zip or a notebook.")
    wanted = set(assignment.files)
    if path.is_dir():
        found = from_folder(path, wanted, assignment.notebook)
        upload = survey_upload(path, assignment)
        if found.sources or found.notebook is not None or found.oversized or found.unreadable:
            # Loose files win over an archive or notebook beside them: say which was left.
            found.notes.extend(ignored_beside_loose_files(upload))
        elif upload.bundles and not upload.loose:
            # The folder's one archive or notebook, as Gradescope grades an upload. (A loose
            # file from_folder could not take, a link say, keeps the folder graded as it is.)
            bundle, notes = choose_from(upload, assignment)
            inner = prepare_submission(bundle, assignment, dest)
            picked = (
                f"Graded {bundle.relative_to(path)}: the folder holds none of the "
                "assignment's files itself."
            )
            return dataclasses.replace(inner, notes=(picked, *notes, *inner.notes))
    elif path.suffix.lower() == ".zip":
        found = from_zip(path, wanted, assignment.notebook)
    elif path.suffix.lower() == ".ipynb":
        found = FoundFiles(notebook=read_capped_file(path, MAX_NOTEBOOK_BYTES))
    elif path.name in wanted:
        found = from_folder(path.parent, {path.name}, None)
    else:
        raise SubmissionError(
            f"{path.name}: cannot grade this kind of file; pass a folder, a .zip, or a notebook."
        )
    return _materialise(found, assignment, dest)


def _materialise(found: FoundFiles, assignment: Assignment, dest: Path) -> PreparedSubmission:
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
    found: FoundFiles,
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
    found: FoundFiles, assignment: Assignment, raw: dict[str, bytes], sources: dict[str, str]
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
