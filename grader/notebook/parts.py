"""Merging a notebook into the submission: each marked part's file built from its cells."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from grader.course.manifest import Assignment, Part
from grader.errors import SubmissionError
from grader.intake.source_check import decode_source
from grader.notebook.cells import (
    DROPPED,
    MAX_CODE_CHARS,
    MAX_LISTED_CELLS,
    MAX_STATEMENTS,
    Cell,
    cell_part,
    read_cells,
)
from grader.notebook.origin import render_part_file
from grader.notebook.statements import ParsedCell, Statement, parse_cell


@dataclass(frozen=True)
class NotebookParts:
    """The sources after merging the notebook in, and where each part's code came from."""

    sources: dict[str, bytes]
    origin: dict[str, str]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _PartCode:
    text: str
    notes: list[str]


def _build_part(
    part: Part,
    own: list[ParsedCell],
    above: list[ParsedCell],
    file_present: bool,
    own_file: str | None,
) -> _PartCode:
    """The part's file: its own cells' definitions and what they need from the cells above.

    `own_file` is the part's .py file, decoded, when the cells import it (None otherwise): in
    Jupyter that import runs the file, so the file's code comes first and the cells' code
    after it, where a definition replaces the file's one of the same name.
    """
    own_module = part.module
    notes: list[str] = []
    kept: list[Statement] = []
    dropped_here: list[Statement] = []
    verbatim: list[ParsedCell] = []
    own_names: set[str] = set()
    for parsed in own:
        if parsed.problem:
            # The cell goes in as it is, so the syntax error is reported in it, once.
            verbatim.append(parsed)
            notes.append(f"{part.id}: notebook {parsed.cell.label}: {parsed.problem}.")
            continue
        for statement in parsed.statements:
            if statement.imports_from == own_module:
                own_names |= statement.imported_names - {"*"}
                if own_file is not None:
                    # In Jupyter the import replaces what the cells defined above it with the
                    # file's: dropped, so the module still holds the file's when it imports
                    # itself below (it is in sys.modules while it runs). Kept where it
                    # stands, the import binds what it binds in Jupyter: `import m as mb`
                    # for `mb.f`, `from m import f as g`.
                    replaced = statement.imported_names
                    kept = [s for s in kept if not s.binds or not s.binds <= replaced]
                    kept.append(statement)
            elif statement.future:
                continue  # lifted to the top of the file
            elif statement.definition and statement.text.strip() != DROPPED:
                kept.append(statement)
            elif not statement.definition:
                dropped_here.append(statement)
    if dropped_here:
        first = dropped_here[0]
        statement_text = first.text.split("\n", 1)[0].strip()[:60]
        more = f" (and {len(dropped_here) - 1} more)" if len(dropped_here) > 1 else ""
        label = next(p.cell.label for p in own if p.cell.number == first.cell)
        notes.append(
            f"{part.id}: line {first.line} of notebook {label}, `{statement_text}`{more}, was "
            "not run: the grader runs only definitions (imports, def, class, assignments) from "
            "notebook cells. Keep experiments in unmarked cells."
        )
    notes.insert(0, _graded_note(part, kept, file_present, own_file is not None))
    # With the file run first, the names the cells import from it are bound, as in Jupyter.
    bound = own_names if own_file is not None else set()
    carried, unresolved = _slice(part, kept, above, bound)
    defined = bound.union(*(s.binds for s in kept), *(s.binds for s in carried))
    missing = sorted(own_names - defined)
    if missing:
        notes.append(
            f"{part.id}: the cell marked part:{part.id} imports {', '.join(missing)} from "
            f"{part.file}, but its code replaces {part.file} entirely, so define "
            f"{'it' if len(missing) == 1 else 'them'} in the cell too (or keep all of the "
            "part's code in the .py file and only the import in the cell)."
        )
    unresolved_notes, missing_names = _unresolved(part, unresolved, above + own)
    notes.extend(unresolved_notes)
    cells = {p.cell.number: p.cell for p in [*above, *own]}
    text = render_part_file(
        part, carried + kept, verbatim, [*above, *own], cells, missing_names, own_file=own_file
    )
    return _PartCode(text, notes)


def _graded_note(part: Part, kept: list[Statement], file_present: bool, file_first: bool) -> str:
    """What the part was graded from: the cells' code alone, or the .py file and then it."""
    if not file_first:
        return f"{part.id}: graded the code in the notebook cell marked part:{part.id}; " + (
            f"{part.file} was ignored (notebook code wins over the .py file)."
            if file_present
            else f"there is no {part.file}."
        )
    names = sorted(set().union(*(s.binds for s in kept if s.imports_from != part.module)))
    listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"{part.id}: graded {part.file} followed by the definitions in the notebook cell marked "
        f"part:{part.id}, as Jupyter runs that cell: its import of {part.module} runs the file, "
        + (
            f"then what the cell defines ({listed}) replaces anything of the same name."
            if names
            else "and the cell defines nothing more."
        )
    )


def _slice(
    part: Part, kept: list[Statement], above: list[ParsedCell], bound: set[str]
) -> tuple[list[Statement], set[str]]:
    """The definitions above that `kept` needs, transitively; and the names none provides.

    Names in `bound` are already provided (by the part's own .py file) and looked for in no cell.
    """
    own_module = part.module
    providers: dict[str, list[Statement]] = {}
    for parsed in above:
        for statement in parsed.statements:
            if not statement.definition or statement.imports_from == own_module:
                continue
            if statement.future:
                continue
            for name in statement.binds or ({"*"} if "*" in statement.imported_names else set()):
                providers.setdefault(name, []).append(statement)
    chosen: set[int] = set()  # ids of carried statements
    carried: list[Statement] = []
    seen: set[str] = set(bound).union(*(s.binds for s in kept))
    pending = [name for s in kept for name in s.uses]
    unresolved: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in providers:
            unresolved.add(name)
            # `from module import *` may provide it: carried once anything is unresolved.
            name = "*"
            if name in seen or name not in providers:
                continue
            seen.add(name)
        for statement in providers[name]:
            if id(statement) not in chosen:
                chosen.add(id(statement))
                carried.append(statement)
                pending.extend(statement.uses)
    order = {id(s): i for i, s in enumerate(s for p in above for s in p.statements)}
    carried.sort(key=lambda s: order[id(s)])
    return carried, unresolved


def _unresolved(
    part: Part, names: set[str], cells: list[ParsedCell]
) -> tuple[list[str], dict[str, str]]:
    """Notes on needed names only a demo statement (or an unreadable cell) would create, and
    for each name a demo statement creates, what a test failing on it should say."""
    if not names:
        return [], {}
    notes: list[str] = []
    missing: dict[str, str] = {}
    by_demo: dict[str, Statement] = {}
    for parsed in cells:
        for statement in parsed.statements:
            if not statement.definition:
                for name in statement.binds & names:
                    by_demo.setdefault(name, statement)
    for name in sorted(by_demo)[:MAX_LISTED_CELLS]:
        statement = by_demo[name]
        label = next(p.cell.label for p in cells if p.cell.number == statement.cell)
        missing[name] = (
            f"`{name}` is created only by line {statement.line} of notebook {label}, in a "
            "statement the grader does not run: from notebook cells it runs imports, def, "
            "class and assignments, not loops, calls or prints. Create "
            f"`{name}` with an assignment or a def, or inside your function."
        )
        notes.append(f"{part.id}: {missing[name]}")
    unread = [p for p in cells if p.problem]
    if names - set(by_demo) and unread:
        notes.append(
            f"{part.id}: your code uses {', '.join(sorted(names - set(by_demo))[:5])}, not "
            "defined in any cell the grader could read; the grader skipped notebook "
            + "; ".join(f"{p.cell.label} ({p.problem})" for p in unread[:MAX_LISTED_CELLS])
            + "."
        )
    return notes, missing


def _only_imports_own_files(cells: Iterable[ParsedCell], own_modules: set[str]) -> bool:
    """True when the cells do nothing but import from the assignment's own .py files."""
    return all(
        not parsed.problem
        and all(
            s.imports_from in own_modules and not s.future and s.text.strip() != DROPPED
            for s in parsed.statements
        )
        for parsed in cells
    )


def _imported_file(
    part: Part, own: list[ParsedCell], file_sources: dict[str, bytes]
) -> tuple[str | None, str]:
    """The part's .py file, decoded, when its cells import the part's module and it was
    submitted (running the cell in Jupyter runs the file); else None. The second value says
    why the file cannot be read as Python source, if so (Jupyter's import would fail too)."""
    data = file_sources.get(part.file)
    if data is None or not any(s.imports_from == part.module for p in own for s in p.statements):
        return None, ""
    text, problem = decode_source(part.file, data)
    return (None, problem) if problem else (text, "")


def merge_notebook_parts(
    data: bytes, assignment: Assignment, file_sources: dict[str, bytes]
) -> NotebookParts:
    """Merge a notebook's marked cells into `file_sources`, with notes: notebook code wins,
    after the part's .py file where the cells import it."""
    cells, notes = read_cells(data)
    code_cells, marked = _marked_cells(cells, assignment, notes)
    last_needed = max((indexes[-1] for indexes in marked.values()), default=-1)
    parsed = _parse_needed(code_cells[: last_needed + 1])
    own_modules = {part.module for part in assignment.parts}
    known = {part.id: part for part in assignment.parts}
    sources = dict(file_sources)
    origin: dict[str, str] = {}
    reported: set[int] = set()
    for part_id, indexes in marked.items():
        part = known[part_id]
        own = [parsed[index] for index in indexes]
        if _only_imports_own_files(own, own_modules):
            # The walkthrough's default cell: grade the .py file, if it was handed in.
            if part.file not in file_sources:
                notes.append(
                    f"The notebook's part:{part.id} cells only import {part.file}, which is "
                    f"not in the submission: hand in {part.file} with the notebook, or write "
                    "the part's code in its marked cell."
                )
            continue
        origin[part.id] = "notebook"
        unusable = [p for p in own if p.cell.unusable or (p.problem and not p.syntax_line)]
        own_file, problem = _imported_file(part, own, file_sources)
        if unusable:
            problem = (
                f"The notebook {unusable[0].cell.label} marked part:{part.id} cannot be "
                f"graded: {unusable[0].problem}."
            )
        if problem:
            # The part cannot be graded: the file holds only the header saying why.
            own_cells = {p.cell.number: p.cell for p in own}
            header = render_part_file(part, [], [], own, own_cells, {}, problem)
            sources[part.file] = header.encode()
            notes.append(f"{part.id}: {problem}")
            continue
        own_numbers = {p.cell.number for p in own}
        above = [p for p in parsed[: indexes[-1]] if p.cell.number not in own_numbers]
        built = _build_part(part, own, above, part.file in file_sources, own_file)
        sources[part.file] = built.text.encode("utf-8")
        notes.extend(built.notes)
        for p in above:
            if p.problem and p.cell.number not in reported:
                reported.add(p.cell.number)
                notes.append(f"Notebook {p.cell.label} was skipped by the grader: {p.problem}.")
    return NotebookParts(sources=sources, origin=origin, notes=notes)


def _marked_cells(
    cells: list[Cell], assignment: Assignment, notes: list[str]
) -> tuple[list[Cell], dict[str, list[int]]]:
    """The code cells, and for each part the indexes (into them) of the cells marked for it.

    A cell marked for a part the assignment does not have is an ordinary cell, with a note.
    """
    known = {part.id for part in assignment.parts}
    marked: dict[str, list[int]] = {}
    code_cells: list[Cell] = []
    unknown: list[tuple[int, str]] = []
    for cell in cells:
        if cell.kind != "code":
            continue
        part_id = cell_part(cell)
        if part_id is not None and part_id not in known:
            unknown.append((cell.number, part_id))
        elif part_id is not None:
            marked.setdefault(part_id, []).append(len(code_cells))
        code_cells.append(cell)
    if unknown:
        shown = ", ".join(f"{number} ({part_id[:40]!r})" for number, part_id in unknown[:5])
        notes.append(
            f"Notebook cells marked for unknown parts were treated as ordinary cells: {shown}"
            f"{' and more' if len(unknown) > 5 else ''}. The parts are "
            f"{assignment.part_ids()}."
        )
    return code_cells, marked


def _parse_needed(needed: list[Cell]) -> list[ParsedCell]:
    """The cells down to the last marked one, parsed; SubmissionError past the caps."""
    total = sum(len(cell.source) for cell in needed)
    if total > MAX_CODE_CHARS:
        raise SubmissionError(
            f"The notebook's code cells hold {total:,} characters, over the "
            f"{MAX_CODE_CHARS:,} the grader reads; keep data in files, delete cells you do "
            "not need, and submit again."
        )
    parsed: list[ParsedCell] = []
    statements = 0
    for cell in needed:
        skipped = ParsedCell(cell, "", (), cell.unusable)
        parsed.append(skipped if cell.unusable else parse_cell(cell))
        statements += len(parsed[-1].statements)
        if statements > MAX_STATEMENTS:
            raise SubmissionError(
                f"The notebook's code cells hold over {MAX_STATEMENTS:,} top-level statements, "
                "more than the grader reads; delete cells you do not need and submit again."
            )
    return parsed
