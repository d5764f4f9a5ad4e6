"""`python -m grader submit`: validate the student's files and zip exactly them for Gradescope.

The zip is built first (under a temporary name next to its destination), then validated
by reading it back with `prepare_submission`, the same code `grade` uses, so what is
checked is what will be graded. Only then does it replace the destination
(`grader.results.atomic.replacing`), so an older zip is never left half-written or silently stale.
"""

from __future__ import annotations

import ast
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.course.manifest import Assignment
from grader.errors import SubmissionError
from grader.intake.bounded import run_bounded
from grader.intake.near_miss import near_miss_advice, near_misses
from grader.intake.source_check import CHECK_MEMORY_BYTES, SOURCE_CHECK_SECONDS
from grader.intake.submission import PreparedSubmission, prepare_submission
from grader.results.atomic import ZipEntry, replacing, write_zip
from grader.student.check import (
    CheckResult,
    check_prepared,
    locate_student_folder,
    print_check,
    resolve_assignment,
)


@dataclass(frozen=True)
class SubmitResult:
    zip_path: Path
    # (name in the zip, size in bytes), in zip order.
    entries: tuple[tuple[str, int], ...]
    # Part id -> functions whose body still only raises NotImplementedError.
    unimplemented: dict[str, list[str]]
    check: CheckResult


def unimplemented_functions(source: str) -> list[str]:
    """Qualified names of the functions in `source` that still only raise NotImplementedError."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_stub(node):
                found.append(prefix + node.name)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


def _is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True when every call ends in the final `raise NotImplementedError` (no way out before)."""
    last = function.body[-1]
    if not isinstance(last, ast.Raise):
        return False
    raised = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    if not (isinstance(raised, ast.Name) and raised.id == "NotImplementedError"):
        return False
    return not any(
        isinstance(node, ast.Return | ast.Yield | ast.YieldFrom) for node in _own_nodes(function)
    )


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of `function`'s body, not descending into nested functions or classes."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, nested):
            pending.extend(ast.iter_child_nodes(node))
    return found


def submission_entries(student_dir: Path, assignment: Assignment) -> list[ZipEntry]:
    """What goes into the zip: each part's .py file and the notebook, where present.

    Written reproducibly: running `submit` again on unchanged files gives the same bytes.
    """
    names = [*assignment.files, *([assignment.notebook] if assignment.notebook else [])]
    return [ZipEntry(name, student_dir / name) for name in names if (student_dir / name).is_file()]


def submit_command(
    directory: Path, assignment_name: str | None, *, output: Path | None, console: Console
) -> SubmitResult:
    """Validate, test and zip the student's files; raise SubmissionError if they cannot go."""
    assignment = resolve_assignment(assignment_name, directory)
    student_dir = locate_student_folder(directory, assignment)
    target = output if output is not None else directory / f"{assignment.id}_submission.zip"
    if not target.parent.is_dir():
        raise SubmissionError(f"{target.parent} is not a folder; choose another -o/--output.")
    files = submission_entries(student_dir, assignment)
    console.print(f"Submitting {assignment.id} from {student_dir}", markup=False)
    # The zip replaces `target` only once it has been read back and tested.
    with (
        replacing(target) as temporary,
        tempfile.TemporaryDirectory(prefix="grader-submit-") as workdir_name,
    ):
        write_zip(temporary, files)
        workdir = Path(workdir_name)
        prepared = prepare_submission(temporary, assignment, workdir / "submission")
        _refuse_unusable(prepared, assignment, student_dir)
        unimplemented = _unimplemented_parts(prepared, assignment)
        _print_sources(prepared, assignment, console)
        console.print("Running the public tests ...", style="dim")
        check = check_prepared(prepared, assignment, student_dir, workdir)
        print_check(check, console, details=False)
    with zipfile.ZipFile(target) as archive:
        entries = tuple((info.filename, info.file_size) for info in archive.infolist())
    result = SubmitResult(target, entries, unimplemented, check)
    _print_outcome(result, assignment, console)
    return result


def _unimplemented_parts(
    prepared: PreparedSubmission, assignment: Assignment
) -> dict[str, list[str]]:
    """Part id -> its stub functions, each file parsed in a bounded child like every source."""
    texts = {part.id: _text(prepared, part.file) for part in assignment.parts}
    outcomes = run_bounded(
        [_stub_task(text) for text in texts.values()],
        seconds=SOURCE_CHECK_SECONDS,
        memory_bytes=CHECK_MEMORY_BYTES,
    )
    return {
        part_id: [str(name) for name in outcome.value]
        for part_id, outcome in zip(texts, outcomes, strict=True)
        if isinstance(outcome.value, list) and outcome.value
    }


def _stub_task(text: str) -> Callable[[], list[str]]:
    return lambda: unimplemented_functions(text)


def _text(prepared: PreparedSubmission, name: str) -> str:
    path = prepared.files.get(name)
    return path.read_text(encoding="utf-8") if path is not None else ""


def _refuse_unusable(prepared: PreparedSubmission, assignment: Assignment, folder: Path) -> None:
    missing = [part.file for part in assignment.parts if prepared.sources[part.id] == "missing"]
    if missing:
        present = sorted(path.name for path in folder.iterdir() if path.is_file())
        renames = [
            near_miss_advice(name, names) for name, names in near_misses(present, missing).items()
        ]
        advice = f" To fix it: {'; '.join(renames)}." if renames else ""
        raise SubmissionError(
            f"missing {', '.join(missing)} in {folder}: every part needs its file (keep the "
            f"untouched stub of a part you did not do).{advice} No zip was written."
        )
    if prepared.problems:
        raise SubmissionError(
            " ".join(prepared.problems.values())
            + " Fix it (or put back the stub of that part), then run submit again. "
            "No zip was written."
        )


def _print_sources(prepared: PreparedSubmission, assignment: Assignment, console: Console) -> None:
    """Say where each part's graded code comes from when the notebook is involved.

    A part whose cells import its .py file is graded as that file followed by the cells'
    definitions: its own note says so.
    """
    from_cells = [
        part
        for part in assignment.parts
        if any(note.startswith(f"{part.id}: graded the code") for note in prepared.notes)
    ]
    for part in from_cells:
        console.print(
            Text.assemble(
                ("graded source: ", "yellow"),
                f"{part.id} will be graded from the cell marked part:{part.id} in "
                f"{assignment.notebook}, not from {part.file} (notebook code wins over the "
                ".py file).",
            )
        )
    for note in prepared.notes:
        if not any(note.startswith(f"{part.id}: graded the code") for part in from_cells):
            console.print(Text.assemble(("note: ", "yellow"), note))


def _print_outcome(result: SubmitResult, assignment: Assignment, console: Console) -> None:
    # soft_wrap: a long path stays on one line, whole, for copying.
    console.print(f"wrote {result.zip_path}", markup=False, soft_wrap=True, style="bold")
    table = Table()
    table.add_column("file in the zip")
    table.add_column("size", justify="right")
    for name, size in result.entries:
        table.add_row(name, _size(size))
    console.print(table)
    console.print(
        Text.assemble(
            ("Next: ", "bold"),
            f"upload {result.zip_path.name} to the {assignment.id} assignment on "
            "Gradescope (Submit, then Upload, and drop the zip as it is; do not unzip it). "
            "Gradescope grades it with the hidden tests; you may resubmit until the deadline.",
        )
    )
    if result.unimplemented:
        console.print(Text("warning: still not implemented (these score 0):", style="bold yellow"))
        for part_id, names in result.unimplemented.items():
            console.print(Text(f"    {part_id}: {', '.join(names)}"))


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KiB"
