"""Extract each part's code from a notebook: the only module that reads .ipynb files.

The convention (also in the student README): a code cell belongs to a part when it carries
the cell tag `part:<part_id>` or its first line is the marker comment `# part: <part_id>`.
The walkthrough ships one such cell per part that only imports from the part's .py file;
a cell that does nothing but that means "grade the .py file". A marked cell with real code
replaces the part's .py file entirely (notebook code wins), and the grader says so.

What runs is what the cell says, with three adjustments so it runs outside Jupyter:
IPython magics and shell escapes (`%timeit`, `!pip install`) become `pass`; imports of
the part's own file are dropped (the cell *is* that file now); and the imports of unmarked
cells (`import torch`, ...) that the cell's code relies on are put in front of it.
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
from collections.abc import Iterable
from dataclasses import dataclass, field

import nbformat

from grader.assignment import Assignment, Part
from grader.errors import SubmissionError

TAG_PREFIX = "part:"
MARKER = re.compile(r"^#\s*part:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
# Cell magics whose body is still Python (IPython runs it, timing or capturing it).
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}
# `losses = %timeit f()` or `files = !ls`: an assignment whose value comes from IPython.
MAGIC_ASSIGNMENT = re.compile(
    r"^(\s*)([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*=\s*[%!]"
)
DROPPED = "pass  # IPython line dropped by the grader"
BUILTIN_NAMES = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}


@dataclass(frozen=True)
class NotebookParts:
    """The sources after merging the notebook in, and where each part's code came from."""

    sources: dict[str, bytes]
    origin: dict[str, str]
    notes: list[str] = field(default_factory=list)


def read_notebook(data: bytes) -> nbformat.NotebookNode:
    """Parse notebook bytes, or raise SubmissionError saying how to get a readable file."""
    try:
        notebook: nbformat.NotebookNode = nbformat.reads(  # type: ignore[no-untyped-call]
            data.decode("utf-8-sig"), as_version=4
        )
    except Exception as error:  # nbformat raises many kinds for a damaged file
        raise SubmissionError(
            f"The notebook could not be read ({type(error).__name__}: {str(error)[:200]}); "
            "re-download it from Jupyter with File > Save and submit again."
        ) from error
    return notebook


def cell_part(cell: nbformat.NotebookNode) -> str | None:
    """The part id a code cell is marked for (its `part:` tag, else its marker comment)."""
    for tag in cell.get("metadata", {}).get("tags", []):
        if isinstance(tag, str) and tag.startswith(TAG_PREFIX):
            return tag[len(TAG_PREFIX) :].strip()
    first_line = cell.source.lstrip().split("\n", 1)[0] if cell.source else ""
    match = MARKER.match(first_line.strip())
    return match.group(1) if match else None


def strip_magics(source: str) -> str:
    """Replace IPython-only lines by `pass`, keeping line numbers, blocks and string contents."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in PYTHON_CELL_MAGICS:
            return ""  # %%bash, %%writefile, ...: the cell is not Python at all
        lines[first] = "# IPython cell magic dropped by the grader"
    inside_string: str | None = None
    for number, line in enumerate(lines):
        starts_inside = inside_string is not None
        inside_string = _string_state_after(line, inside_string)
        if starts_inside:
            continue
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith(("%", "!")):
            lines[number] = indent + DROPPED
        elif match := MAGIC_ASSIGNMENT.match(line):
            lines[number] = f"{match.group(1)}{match.group(2)} = None  # IPython value dropped"
    return "\n".join(lines)


def _string_state_after(line: str, inside: str | None) -> str | None:
    """Which triple quote (if any) is still open at the end of `line`."""
    position = 0
    while position < len(line):
        if inside is not None:
            end = line.find(inside, position)
            while end > 0 and _escaped(line, end):
                end = line.find(inside, end + 1)
            if end < 0:
                return inside
            position, inside = end + 3, None
            continue
        char = line[position]
        if char == "#":
            return None
        if char in "'\"":
            if line.startswith(char * 3, position):
                inside, position = char * 3, position + 3
                continue
            end = position + 1
            while end < len(line) and (line[end] != char or _escaped(line, end)):
                end += 1
            position = end + 1
            continue
        position += 1
    return inside


def _escaped(line: str, index: int) -> bool:
    backslashes = 0
    while index - backslashes - 1 >= 0 and line[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _bound_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {(alias.asname or alias.name).split(".")[0] for alias in node.names}


def _imports_module(node: ast.stmt, modules: set[str]) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module in modules
    if isinstance(node, ast.Import):
        return any(alias.name in modules for alias in node.names)
    return False


def _only_imports_own_files(source: str, own_modules: set[str]) -> bool:
    """True when the code does nothing but import from the assignment's own .py files."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return all(_imports_module(node, own_modules) for node in tree.body)


def _symbols(code: str) -> symtable.SymbolTable | None:
    try:
        return symtable.symtable(code, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None


def _top_level_names(code: str) -> set[str]:
    """The names the code binds at module level (assignments, imports, defs, classes)."""
    table = _symbols(code)
    if table is None:
        return set()
    return {
        symbol.get_name()
        for symbol in table.get_symbols()
        if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()
    }


def _global_names_used(code: str) -> set[str]:
    """Names the code looks up as globals without binding them itself (not builtins)."""
    table = _symbols(code)
    if table is None:
        return set()
    used: set[str] = set()
    pending = [table]
    while pending:
        scope = pending.pop()
        pending.extend(scope.get_children())
        for symbol in scope.get_symbols():
            is_module = scope.get_type() == "module"
            if symbol.is_referenced() and (is_module or symbol.is_global()):
                used.add(symbol.get_name())
    return used - _top_level_names(code) - BUILTIN_NAMES


@dataclass(frozen=True)
class _SetupCells:
    """What the unmarked cells define: their import statements and other top-level names."""

    imports: list[tuple[str, set[str]]]
    other_names: set[str]


def _read_setup_cells(cells: Iterable[nbformat.NotebookNode], own_modules: set[str]) -> _SetupCells:
    imports: list[tuple[str, set[str]]] = []
    other_names: set[str] = set()
    for cell in cells:
        source = strip_magics(cell.source)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
                if is_future or _imports_module(node, own_modules):
                    continue
                text = ast.get_source_segment(source, node)
                if text and all(text != seen for seen, _ in imports):
                    imports.append((text, _bound_names(node)))
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                other_names |= {
                    child.id
                    for child in ast.walk(node)
                    if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)
                }
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                other_names.add(node.name)
    return _SetupCells(imports, other_names)


@dataclass(frozen=True)
class _CellCode:
    """One marked cell's code, cleaned, with what was taken out of it."""

    code: str
    future_imports: list[str]
    own_names: set[str]


def _clean_cell(source: str, part: Part) -> _CellCode:
    """Drop the cell's imports of its own part file and lift out `from __future__` lines."""
    code = strip_magics(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return _CellCode(code, [], set())
    lines = code.split("\n")
    future: list[str] = []
    own_names: set[str] = set()
    for node in tree.body:
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        is_own = _imports_module(node, {part.module})
        if not (is_future or is_own):
            continue
        if is_future:
            future.append(ast.get_source_segment(code, node) or "")
        elif isinstance(node, ast.ImportFrom):
            own_names |= {alias.asname or alias.name for alias in node.names} - {"*"}
        end = node.end_lineno or node.lineno
        for index in range(node.lineno - 1, end):
            lines[index] = ""  # blank, not deleted, so line numbers still match the cell
    return _CellCode("\n".join(lines), future, own_names)


def _cell_notes(part: Part, cell: _CellCode) -> list[str]:
    """Warnings a student can act on: syntax errors and code that runs on import."""
    try:
        tree = ast.parse(cell.code)
    except SyntaxError as error:
        return [
            f"{part.id}: the notebook cell marked part:{part.id} has a syntax error on line "
            f"{error.lineno} of the cell: {error.msg}."
        ]
    notes = []
    for node in tree.body:
        runs_code = isinstance(node, ast.For | ast.While) or (
            isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)
        )
        if runs_code:
            statement = (ast.get_source_segment(cell.code, node) or "").split("\n")[0][:60]
            notes.append(
                f"{part.id}: line {node.lineno} of the cell marked part:{part.id} runs "
                f"`{statement}` when the part is loaded, before every test; move experiments "
                "to an unmarked cell."
            )
            break
    return notes


def _extract_part(
    part: Part, cells: list[_CellCode], setup: _SetupCells, file_present: bool
) -> tuple[str, list[str]]:
    """The text of the part's file built from its marked cells, and notes about it."""
    code = "\n\n".join(cell.code for cell in cells)
    used = _global_names_used(code)
    imports = [text for text, names in setup.imports if names & used]
    provided = set().union(*(names for text, names in setup.imports if text in imports))
    notes = [
        f"{part.id}: graded the code in the notebook cell marked part:{part.id}; "
        + (
            f"{part.file} was ignored (notebook code wins over the .py file)."
            if file_present
            else f"there is no {part.file}."
        )
    ]
    for cell in cells:
        notes.extend(_cell_notes(part, cell))
    defined_here = _top_level_names(code)
    missing = sorted(set().union(*(cell.own_names for cell in cells)) - defined_here)
    if missing:
        notes.append(
            f"{part.id}: the cell marked part:{part.id} imports {', '.join(missing)} from "
            f"{part.file}, but its code replaces {part.file} entirely, so define "
            f"{'it' if len(missing) == 1 else 'them'} in the cell too (or keep all of the "
            "part's code in the .py file and only the import in the cell)."
        )
    elsewhere = sorted((used - provided) & setup.other_names)
    if elsewhere:
        notes.append(
            f"{part.id}: the cell marked part:{part.id} uses {', '.join(elsewhere)}, defined "
            "in another cell; only the marked cell is graded, so define them inside it."
        )
    future = list(dict.fromkeys(line for cell in cells for line in cell.future_imports))
    header = f"# Extracted by the grader from the notebook cell(s) marked part:{part.id}.\n"
    text = header + "".join(line + "\n" for line in future + imports) + "\n" + code + "\n"
    return text, notes


def merge_notebook_parts(
    data: bytes, assignment: Assignment, file_sources: dict[str, bytes]
) -> NotebookParts:
    """Merge a notebook's marked cells into `file_sources` (notebook code wins, with a note)."""
    notebook = read_notebook(data)
    own_modules = {part.module for part in assignment.parts}
    known = {part.id: part for part in assignment.parts}
    marked: dict[str, list[str]] = {}
    unmarked: list[nbformat.NotebookNode] = []
    notes: list[str] = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        part_id = cell_part(cell)
        if part_id is None:
            unmarked.append(cell)
        elif part_id not in known:
            notes.append(
                f"A notebook cell marked for unknown part {part_id!r} was ignored; "
                f"the parts are {assignment.part_ids()}."
            )
        else:
            marked.setdefault(part_id, []).append(cell.source)
    setup = _read_setup_cells(unmarked, own_modules)
    sources = dict(file_sources)
    origin: dict[str, str] = {}
    for part_id, cell_sources in marked.items():
        part = known[part_id]
        if _only_imports_own_files("\n".join(map(strip_magics, cell_sources)), own_modules):
            continue  # the walkthrough's default cell: grade the .py file
        cells = [_clean_cell(source, part) for source in cell_sources]
        text, part_notes = _extract_part(part, cells, setup, part.file in file_sources)
        sources[part.file] = text.encode("utf-8")
        origin[part.id] = "notebook"
        notes.extend(part_notes)
    return NotebookParts(sources=sources, origin=origin, notes=notes)
