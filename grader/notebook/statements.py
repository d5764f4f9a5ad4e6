"""A cell's top-level statements: what each binds, which globals it reads, whether it defines."""

from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass

from grader.notebook.cells import (
    MAX_CELL_BRACES,
    MAX_CELL_STATEMENTS,
    Cell,
    strip_magics,
)

BUILTIN_NAMES = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}


@dataclass(frozen=True)
class Statement:
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
class ParsedCell:
    cell: Cell
    code: str
    statements: tuple[Statement, ...]
    # Why its statements are unknown ("" when parsed): a syntax error, a cap that was hit.
    problem: str = ""
    syntax_line: int = 0


def parse_cell(cell: Cell) -> ParsedCell:
    code = strip_magics(cell.source)
    braces = code.count("{")
    if braces > MAX_CELL_BRACES:
        return ParsedCell(
            cell,
            code,
            (),
            f"it holds {braces:,} `{{`, over the {MAX_CELL_BRACES:,} the grader reads in one "
            "cell (long f-strings are slow to parse); split it or keep data in files",
        )
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        return ParsedCell(
            cell, code, (), f"it has a syntax error on line {error.lineno}: {error.msg}",
            error.lineno or 0,
        )  # fmt: skip
    except (ValueError, MemoryError, RecursionError) as error:
        return ParsedCell(
            cell, code, (), f"it is too deeply nested to read ({type(error).__name__})"
        )
    if len(tree.body) > MAX_CELL_STATEMENTS:
        return ParsedCell(
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
    return ParsedCell(cell, code, tuple(statements))


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


def _statement(cell: int, line: int, text: str, node: ast.stmt) -> Statement:
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
        return Statement(
            cell, line, text, frozenset(binds), frozenset(uses), True, future, node.module, names
        )
    if isinstance(node, ast.Import):
        modules = {alias.name.split(".")[0] for alias in node.names}
        module = next(iter(modules)) if len(modules) == 1 else None
        return Statement(
            cell, line, text, frozenset(binds), frozenset(uses), True, imports_from=module
        )
    return Statement(cell, line, text, frozenset(binds), frozenset(uses), _is_definition(node))


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
