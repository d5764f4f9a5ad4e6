"""Extract each part's code from a notebook: the only module that reads .ipynb files.

The convention (also in the student README): a code cell belongs to a part when it carries
the cell tag `part:<part_id>` or its first line is the marker comment `# part: <part_id>`.
The walkthrough ships one such cell per part that only imports from the part's .py file;
a cell that does nothing but that means "grade the .py file". A marked cell with real code
replaces the part's .py file entirely (notebook code wins), and the grader says so.

The model (docs/notebooks.md): the part's file is built as Jupyter would have run the
notebook down to the part's last marked cell, without its demos. From the part's own cells,
every definition is kept: imports, `def`, `class`, assignments, and `if`/`with`/`try` blocks
made only of these. From every code cell above (ordinary cells and other parts' cells), a
definition is kept when the part's code needs a name it binds, directly or through other
kept definitions. Everything else (calls, prints, plots, loops, training runs) is a demo
statement and is not run; a name the part needs that only a demo statement creates is
reported, naming the cell. IPython magics and shell escapes become `pass`.

Each generated file starts with a source map (generated line -> cell, line in the cell), so
that feedback about line N of the generated file can name the cell and the line the student
wrote (`point_at_cells`).

Everything here is bounded and linear in the notebook's size: notebooks, cells, statements
and the braces that make Python's parser slow are capped, and a cap that is hit says which
cell and what to do, costing only the parts that need that cell.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import symtable
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

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
ORIGIN_PREFIX = "# grader-notebook-origin: "

# Bounds on what is read from a notebook. Real ones are far inside all of them; each keeps
# the work linear and small whatever the student sends.
MAX_CELLS = 2_000
MAX_CELL_CHARS = 100_000
MAX_CODE_CHARS = 1_000_000
MAX_CELL_STATEMENTS = 2_000
MAX_STATEMENTS = 20_000
# Python's parser takes time quadratic in the fields of one f-string (20,000 fields: 2 s).
MAX_CELL_BRACES = 2_000
MAX_SNIPPET_CHARS = 50
MAX_LISTED_CELLS = 10
MAX_ORIGIN_CHARS = 2_000_000
_SURROGATES = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069`]")


@dataclass(frozen=True)
class Cell:
    """One cell as the grader reads it: `number` counts all cells from 1, top to bottom."""

    number: int
    kind: str
    source: str
    tags: tuple[str, ...] = ()
    # Why the cell's code cannot be used (too large, source not text), or "".
    unusable: str = ""

    @property
    def first_line(self) -> str:
        """The cell's first non-blank line, shortened and printable, to name the cell by."""
        line = next((ln.strip() for ln in self.source[:2000].split("\n") if ln.strip()), "")
        line = _UNPRINTABLE.sub(" ", line)
        return line if len(line) <= MAX_SNIPPET_CHARS else line[: MAX_SNIPPET_CHARS - 3] + "..."

    @property
    def label(self) -> str:
        return (
            f"cell {self.number} (`{self.first_line}`)"
            if self.first_line
            else (f"cell {self.number}")
        )


@dataclass(frozen=True)
class NotebookOrigin:
    """What the header of a generated part file tells the grader about the file.

    `runs` holds (first generated line, line count, cell number, first line in the cell),
    sorted by generated line; `labels` maps a cell number to its label (`Cell.label`);
    `missing` maps a name the part needs but only a demo statement creates to what to say
    about it; `problem` says why the part's notebook code cannot be graded at all, if so.
    """

    runs: tuple[tuple[int, int, int, int], ...]
    labels: dict[int, str]
    missing: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    def locate(self, line: int) -> tuple[str, int] | None:
        """The label of the cell line `line` of the generated file came from, and its line."""
        index = bisect_right(self.runs, (line, 1 << 62)) - 1
        if index < 0:
            return None
        start, count, cell, cell_line = self.runs[index]
        if line >= start + count or cell not in self.labels:
            return None
        return self.labels[cell], cell_line + line - start


@dataclass(frozen=True)
class NotebookParts:
    """The sources after merging the notebook in, and where each part's code came from."""

    sources: dict[str, bytes]
    origin: dict[str, str]
    notes: list[str] = field(default_factory=list)


# -- reading the notebook ---------------------------------------------------------------


def read_cells(data: bytes) -> tuple[list[Cell], list[str]]:
    """The notebook's cells and notes on what was wrong in them; SubmissionError if none.

    Only what grading needs is read (each cell's type, source and tags), straight from the
    JSON, so a wrong type anywhere else (outputs, execution counts, other metadata) changes
    nothing, and a wrong type in one cell costs only that cell.
    """
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise SubmissionError(
            f"The notebook is not UTF-8 text (byte {error.start}); re-download it from Jupyter "
            "with File > Download and submit again."
        ) from error
    except json.JSONDecodeError as error:
        raise SubmissionError(
            f"The notebook is not valid JSON (line {error.lineno}, column {error.colno}: "
            f"{error.msg}); re-download it from Jupyter with File > Download and submit again."
        ) from error
    except (ValueError, RecursionError) as error:
        raise SubmissionError(
            f"The notebook could not be read ({type(error).__name__}); re-download it from "
            "Jupyter with File > Download and submit again."
        ) from error
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        version = notebook.get("nbformat") if isinstance(notebook, dict) else None
        if isinstance(version, int) and version < 4:
            raise SubmissionError(
                f"The notebook is in the old format version {version}; open it in Jupyter, "
                "save it (File > Save) and submit again."
            )
        raise SubmissionError(
            "The notebook has no list of cells; re-download it from Jupyter with "
            "File > Download and submit again."
        )
    raw_cells: list[Any] = notebook["cells"]
    if len(raw_cells) > MAX_CELLS:
        raise SubmissionError(
            f"The notebook has {len(raw_cells):,} cells, more than the {MAX_CELLS:,} the grader "
            "reads; delete the cells you do not need and submit again."
        )
    damage: dict[str, list[int]] = {}
    cells = [_read_cell(number, raw, damage) for number, raw in enumerate(raw_cells, start=1)]
    notes = [
        f"Notebook cell{'s' if len(numbers) > 1 else ''} {_list_numbers(numbers)}: {what}"
        for what, numbers in damage.items()
    ]
    return cells, notes


def _list_numbers(numbers: Sequence[int]) -> str:
    shown = ", ".join(map(str, numbers[:MAX_LISTED_CELLS]))
    extra = len(numbers) - MAX_LISTED_CELLS
    return shown + (f" and {extra} more" if extra > 0 else "")


def _read_cell(number: int, raw: Any, damage: dict[str, list[int]]) -> Cell:
    """One cell from its JSON, tolerating wrong types; what was wrong goes into `damage`."""

    def damaged(what: str) -> None:
        damage.setdefault(what, []).append(number)

    if not isinstance(raw, dict):
        damaged("not a cell (not a JSON object); ignored.")
        return Cell(number, "", "")
    kind = raw.get("cell_type")
    if not isinstance(kind, str):
        damaged("no valid cell_type; ignored. Delete and re-create the cell in Jupyter.")
        return Cell(number, "", "")
    metadata = raw.get("metadata", {})
    tags: tuple[str, ...] = ()
    if not isinstance(metadata, dict):
        damaged("metadata is not a JSON object; the grader ignored it (and any part: tag).")
    else:
        raw_tags = metadata.get("tags", [])
        if isinstance(raw_tags, list) and all(isinstance(tag, str) for tag in raw_tags):
            tags = tuple(raw_tags)
        else:
            damaged(
                "metadata.tags is not a list of strings; the grader ignored the tags (the "
                "`# part:` first line still marks a cell). Fix the tags in Jupyter's "
                "property inspector."
            )
    source = raw.get("source", "")
    if isinstance(source, list) and all(isinstance(piece, str) for piece in source):
        source = "".join(source)
    if not isinstance(source, str):
        damaged("source is not text; the cell was ignored. Re-type it in Jupyter.")
        return Cell(number, kind, "", tags, "its source is not text; re-type it in Jupyter")
    if len(source) > MAX_CELL_CHARS:
        return Cell(
            number,
            kind,
            source[:2000],
            tags,
            f"it holds {len(source):,} characters, over the {MAX_CELL_CHARS:,} the grader reads "
            "in one cell; keep data in files and split long code over several cells",
        )
    source = _SURROGATES.sub("\ufffd", source)
    return Cell(number, kind, source, tags)


def cell_part(cell: Cell) -> str | None:
    """The part id a code cell is marked for (its `part:` tag, else its marker comment)."""
    for tag in cell.tags:
        if tag.startswith(TAG_PREFIX):
            return tag[len(TAG_PREFIX) :].strip()
    first_line = cell.source.lstrip().split("\n", 1)[0] if cell.source else ""
    match = MARKER.match(first_line.strip())
    return match.group(1) if match else None


# -- IPython syntax ---------------------------------------------------------------------


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


# -- statements -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Statement:
    """One top-level statement of a cell, with what it binds and which globals it reads."""

    cell: int
    line: int  # its first line in the cell (decorators included)
    text: str
    binds: frozenset[str]
    uses: frozenset[str]
    definition: bool
    future: bool = False
    imports_from: str | None = None  # the module an import statement reads, if one
    imported_names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _ParsedCell:
    cell: Cell
    code: str
    statements: tuple[_Statement, ...]
    # Why its statements are unknown ("" when parsed): a syntax error, a cap that was hit.
    problem: str = ""
    syntax_line: int = 0


def _parse_cell(cell: Cell) -> _ParsedCell:
    code = strip_magics(cell.source)
    braces = code.count("{")
    if braces > MAX_CELL_BRACES:
        return _ParsedCell(
            cell,
            code,
            (),
            f"it holds {braces:,} `{{`, over the {MAX_CELL_BRACES:,} the grader reads in one "
            "cell (long f-strings are slow to parse); split it or keep data in files",
        )
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        return _ParsedCell(
            cell, code, (), f"it has a syntax error on line {error.lineno}: {error.msg}",
            error.lineno or 0,
        )  # fmt: skip
    except (ValueError, MemoryError, RecursionError) as error:
        return _ParsedCell(
            cell, code, (), f"it is too deeply nested to read ({type(error).__name__})"
        )
    if len(tree.body) > MAX_CELL_STATEMENTS:
        return _ParsedCell(
            cell,
            code,
            (),
            f"it holds {len(tree.body):,} top-level statements, over the "
            f"{MAX_CELL_STATEMENTS:,} the grader reads in one cell; split it into several cells",
        )
    lines = code.split("\n")
    body = tree.body
    starts = [_first_line(node) for node in body]
    statements = []
    for index, node in enumerate(body):
        end = node.end_lineno or node.lineno
        shares_a_line = (index > 0 and (body[index - 1].end_lineno or 0) >= starts[index]) or (
            index + 1 < len(body) and starts[index + 1] <= end
        )
        full_lines = "\n".join(lines[starts[index] - 1 : end])
        text = _segment(lines, node) if shares_a_line else full_lines
        statements.append(_statement(cell.number, starts[index], text, node))
    return _ParsedCell(cell, code, tuple(statements))


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The exact text of a statement that shares its lines with others (`a = 1; f()`)."""
    end_line = node.end_lineno or node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else None
    # Column offsets count UTF-8 bytes.
    chunk = [line.encode() for line in lines[node.lineno - 1 : end_line]]
    if end_col is not None:
        chunk[-1] = chunk[-1][:end_col]
    chunk[0] = chunk[0][node.col_offset :]
    return "\n".join(part.decode(errors="replace") for part in chunk)


def _statement(cell: int, line: int, text: str, node: ast.stmt) -> _Statement:
    if isinstance(node, ast.Import | ast.ImportFrom):
        # What an import binds is in its names; it reads no globals.
        binds = {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        uses: set[str] = set()
    else:
        binds, uses = _module_names(node) or _names(text)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        uses -= {node.name}  # a body that calls itself means this definition
    binds |= _mutated(node)
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        future = node.module == "__future__"
        names = frozenset(alias.asname or alias.name for alias in node.names)
        return _Statement(
            cell, line, text, frozenset(binds), frozenset(uses), True, future, node.module, names
        )
    if isinstance(node, ast.Import):
        modules = {alias.name.split(".")[0] for alias in node.names}
        module = next(iter(modules)) if len(modules) == 1 else None
        return _Statement(
            cell, line, text, frozenset(binds), frozenset(uses), True, imports_from=module
        )
    return _Statement(cell, line, text, frozenset(binds), frozenset(uses), _is_definition(node))


def _module_names(node: ast.stmt) -> tuple[set[str], set[str]] | None:
    """`_names` from the tree alone, for a statement with no nested scope (most of them)."""
    binds: set[str] = set()
    uses: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            (uses if isinstance(child.ctx, ast.Load) else binds).add(child.id)
        elif isinstance(child, SCOPES):
            return None
    return binds, uses - BUILTIN_NAMES


def _names(text: str) -> tuple[set[str], set[str]]:
    """Names `text` binds at module level, and globals it reads (builtins left out)."""
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set(), set()
    binds = {
        symbol.get_name()
        for symbol in table.get_symbols()
        if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()
    }
    uses: set[str] = set()
    pending = [table]
    while pending:
        scope = pending.pop()
        pending.extend(scope.get_children())
        is_module = scope.get_type() == "module"
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (is_module or symbol.is_global()):
                uses.add(symbol.get_name())
    return binds, uses - BUILTIN_NAMES


def _mutated(node: ast.stmt) -> set[str]:
    """Names whose objects an assignment changes: `config["lr"] = 0.1` belongs to `config`."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    names = set()
    for target in targets:
        while isinstance(target, ast.Attribute | ast.Subscript | ast.Starred):
            target = target.value
        if isinstance(target, ast.Name):
            names.add(target.id)
    for child in _child_blocks(node):
        for statement in child:
            names |= _mutated(statement)
    return names


def _child_blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [node.body]
    if isinstance(node, ast.Try | ast.TryStar):
        return [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
    return []


SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
    ast.Global,
)


def _is_definition(node: ast.stmt) -> bool:
    """Imports, defs, classes, assignments, and if/with/try blocks made only of them."""
    if isinstance(node, DEFINITIONS):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring or `...`
    blocks = _child_blocks(node)
    return bool(blocks) and all(_is_definition(child) for block in blocks for child in block)


# -- building a part's file -------------------------------------------------------------


@dataclass(frozen=True)
class _PartCode:
    text: str
    notes: list[str]


def _build_part(
    part: Part,
    own: list[_ParsedCell],
    above: list[_ParsedCell],
    file_present: bool,
) -> _PartCode:
    """The part's file: its own cells' definitions and what they need from the cells above."""
    own_module = part.module
    notes = [
        f"{part.id}: graded the code in the notebook cell marked part:{part.id}; "
        + (
            f"{part.file} was ignored (notebook code wins over the .py file)."
            if file_present
            else f"there is no {part.file}."
        )
    ]
    kept: list[_Statement] = []
    dropped_here: list[_Statement] = []
    verbatim: list[_ParsedCell] = []
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
    carried, unresolved = _slice(part, kept, above)
    defined = set().union(*(s.binds for s in kept), *(s.binds for s in carried))
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
    text = _render(part, carried + kept, verbatim, [*above, *own], cells, missing_names)
    return _PartCode(text, notes)


def _slice(
    part: Part, kept: list[_Statement], above: list[_ParsedCell]
) -> tuple[list[_Statement], set[str]]:
    """The definitions above that `kept` needs, transitively; and the names none provides."""
    own_module = part.module
    providers: dict[str, list[_Statement]] = {}
    for parsed in above:
        for statement in parsed.statements:
            if not statement.definition or statement.imports_from == own_module:
                continue
            if statement.future:
                continue
            for name in statement.binds or ({"*"} if "*" in statement.imported_names else set()):
                providers.setdefault(name, []).append(statement)
    chosen: set[int] = set()  # ids of carried statements
    carried: list[_Statement] = []
    seen: set[str] = set().union(*(s.binds for s in kept))
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
    part: Part, names: set[str], cells: list[_ParsedCell]
) -> tuple[list[str], dict[str, str]]:
    """Notes on needed names only a demo statement (or an unreadable cell) would create, and
    for each name a demo statement creates, what a test failing on it should say."""
    if not names:
        return [], {}
    notes: list[str] = []
    missing: dict[str, str] = {}
    by_demo: dict[str, _Statement] = {}
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


def _render(
    part: Part,
    statements: list[_Statement],
    verbatim: list[_ParsedCell],
    order: list[_ParsedCell],
    cells: dict[int, Cell],
    missing: dict[str, str],
    problem: str = "",
) -> str:
    """The file's text: a header (`NotebookOrigin`), future imports, then the code."""
    future = list(dict.fromkeys(s.text.strip() for p in order for s in p.statements if s.future))
    chunks: list[tuple[int, int, str]] = [(s.cell, s.line, s.text) for s in statements]
    chunks += [(p.cell.number, 1, p.code) for p in verbatim]
    chunks.sort(key=lambda chunk: (chunk[0], chunk[1]))
    header_lines = 2 + len(future) + 1
    body: list[str] = []
    runs: list[list[int]] = []
    previous_cell = -1
    for cell, line, text in chunks:
        if cell != previous_cell:
            body.append(f"# notebook cell {cell}")
            previous_cell = cell
        generated = header_lines + len(body) + 1
        count = text.count("\n") + 1
        last = runs[-1] if runs else None
        if (
            last
            and last[2] == cell
            and last[0] + last[1] == generated
            and last[3] + last[1] == line
        ):
            last[1] += count
        else:
            runs.append([generated, count, cell, line])
        body.extend(text.split("\n"))
    labels = {str(number): cells[number].label for number in {run[2] for run in runs}}
    origin = {"runs": runs, "labels": labels, "missing": missing, "problem": problem}
    header = [
        f"# Built by the grader from the notebook for part {part.id}: definitions from the "
        "part's cells and what they use from the cells above (docs/notebooks.md).",
        ORIGIN_PREFIX + json.dumps(origin, ensure_ascii=True),
        *future,
        "",
    ]
    return "\n".join(header + body) + "\n"


# -- the source map, read back ----------------------------------------------------------


def read_origin(head: str) -> NotebookOrigin | None:
    """The `NotebookOrigin` in the header of a file `merge_notebook_parts` wrote, or None.

    `head` is the file's first two lines (at least). Only called for files the grader
    generated (their part's source is "notebook"): the header comes before any of the
    student's code, so it says only what the grader wrote.
    """
    lines = head.split("\n", 2)
    if len(lines) < 2 or not lines[1].startswith(ORIGIN_PREFIX):
        return None
    if len(lines[1]) > MAX_ORIGIN_CHARS:
        return None
    try:
        data = json.loads(lines[1][len(ORIGIN_PREFIX) :])
        runs = tuple((int(a), int(b), int(c), int(d)) for a, b, c, d in data["runs"])
        labels = {int(key): str(value) for key, value in data["labels"].items()}
        missing = {str(key): str(value) for key, value in data["missing"].items()}
        problem = str(data["problem"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return NotebookOrigin(tuple(sorted(runs)), labels, missing, problem)


def explain_missing_names(message: str, origin: NotebookOrigin) -> str:
    """Add to a NameError's message why the name is missing, when a demo statement made it."""
    for name, explanation in origin.missing.items():
        if f"name '{name}' is not defined" in message:
            message = f"{message} {explanation}"
    return message


def point_at_cells(message: str, maps: dict[str, NotebookOrigin], own_file: str = "") -> str:
    """Rewrite references to lines of generated files as the notebook cells they came from.

    "line 8 of autograd_loop.py" becomes "line 3 of notebook cell 7 (`def train(...`)";
    "autograd_loop.py has a syntax error on line 8", "autograd_loop.py failed to import" and
    traceback frames likewise. In a
    message about `own_file` (a test of its part) that names that file, a bare "line 8:"
    (how static rules list findings) is rewritten too. Each place is rewritten at most once;
    lines the grader wrote itself are left as they are.
    """
    for file_name, origin in maps.items():
        if file_name not in message:
            continue
        name = re.escape(file_name)
        patterns = [
            rf"(?P<syntax>\b{name} has a syntax error on line (?P<syntax_line>\d+))",
            rf"(?P<of>\bline (?P<of_line>\d+) of {name})",
            rf'(?P<frame>File "(?:[^"\n]*/)?{name}", line (?P<frame_line>\d+))',
            rf"(?P<failed>\b{name} failed to import)",
        ]
        if file_name == own_file:
            patterns.append(r"(?P<bare>\bline (?P<bare_line>\d+):)")
        message = re.sub("|".join(patterns), partial(_rewrite, origin=origin), message)
    return message


def _rewrite(match: re.Match[str], origin: NotebookOrigin) -> str:
    groups = match.groupdict()
    if groups.get("failed") is not None:
        # There is no such file to blame: the part's code is the notebook's.
        return "The part's code from the notebook failed to run"
    kind = next(k for k in ("syntax", "of", "frame", "bare") if groups.get(k) is not None)
    found = origin.locate(int(match.group(f"{kind}_line")))
    if found is None:
        return match.group(0)
    label, line = found
    return {
        "syntax": f"notebook {label} has a syntax error on line {line}",
        "of": f"line {line} of notebook {label}",
        "frame": f'File "notebook {label}", line {line}',
        "bare": f"line {line} of notebook {label}:",
    }[kind]


# -- merging ----------------------------------------------------------------------------


def _only_imports_own_files(cells: Iterable[_ParsedCell], own_modules: set[str]) -> bool:
    """True when the cells do nothing but import from the assignment's own .py files."""
    return all(
        not parsed.problem
        and all(
            s.imports_from in own_modules and not s.future and s.text.strip() != DROPPED
            for s in parsed.statements
        )
        for parsed in cells
    )


def merge_notebook_parts(
    data: bytes, assignment: Assignment, file_sources: dict[str, bytes]
) -> NotebookParts:
    """Merge a notebook's marked cells into `file_sources` (notebook code wins, with a note)."""
    cells, notes = read_cells(data)
    own_modules = {part.module for part in assignment.parts}
    known = {part.id: part for part in assignment.parts}
    marked: dict[str, list[int]] = {}  # part id -> indexes into `code_cells`
    code_cells: list[Cell] = []
    unknown: list[tuple[int, str]] = []
    for cell in cells:
        if cell.kind != "code":
            continue
        part_id = cell_part(cell)
        if part_id is not None and part_id not in known:
            unknown.append((cell.number, part_id))
            part_id = None
        if part_id is not None:
            marked.setdefault(part_id, []).append(len(code_cells))
        code_cells.append(cell)
    if unknown:
        shown = ", ".join(f"{number} ({part_id[:40]!r})" for number, part_id in unknown[:5])
        notes.append(
            f"Notebook cells marked for unknown parts were treated as ordinary cells: {shown}"
            f"{' and more' if len(unknown) > 5 else ''}. The parts are "
            f"{assignment.part_ids()}."
        )
    last_needed = max((indexes[-1] for indexes in marked.values()), default=-1)
    needed = code_cells[: last_needed + 1]
    total = sum(len(cell.source) for cell in needed)
    if total > MAX_CODE_CHARS:
        raise SubmissionError(
            f"The notebook's code cells hold {total:,} characters, over the "
            f"{MAX_CODE_CHARS:,} the grader reads; keep data in files, delete cells you do "
            "not need, and submit again."
        )
    parsed: list[_ParsedCell] = []
    statements = 0
    for cell in needed:
        skipped = _ParsedCell(cell, "", (), cell.unusable)
        parsed.append(skipped if cell.unusable else _parse_cell(cell))
        statements += len(parsed[-1].statements)
        if statements > MAX_STATEMENTS:
            raise SubmissionError(
                f"The notebook's code cells hold over {MAX_STATEMENTS:,} top-level statements, "
                "more than the grader reads; delete cells you do not need and submit again."
            )
    sources = dict(file_sources)
    origin: dict[str, str] = {}
    reported: set[int] = set()
    for part_id, indexes in marked.items():
        part = known[part_id]
        own = [parsed[index] for index in indexes]
        if _only_imports_own_files(own, own_modules):
            continue  # the walkthrough's default cell: grade the .py file
        origin[part.id] = "notebook"
        unusable = [p for p in own if p.cell.unusable or (p.problem and not p.syntax_line)]
        if unusable:
            # Notebook code still wins: the file holds only the header saying why.
            problem = (
                f"The notebook {unusable[0].cell.label} marked part:{part.id} cannot be "
                f"graded: {unusable[0].problem}."
            )
            own_cells = {p.cell.number: p.cell for p in own}
            sources[part.file] = _render(part, [], [], own, own_cells, {}, problem).encode()
            notes.append(f"{part.id}: {problem}")
            continue
        own_numbers = {p.cell.number for p in own}
        above = [p for p in parsed[: indexes[-1]] if p.cell.number not in own_numbers]
        built = _build_part(part, own, above, part.file in file_sources)
        sources[part.file] = built.text.encode("utf-8")
        notes.extend(built.notes)
        for p in above:
            if p.problem and p.cell.number not in reported:
                reported.add(p.cell.number)
                notes.append(f"Notebook {p.cell.label} was skipped by the grader: {p.problem}.")
    return NotebookParts(sources=sources, origin=origin, notes=notes)
