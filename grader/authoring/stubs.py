"""Students' stubs from the references: the solution markers and the transform that reads them.

A reference (solutions/<id>/<part file>) is the one source of its part: the docstrings the
students read, the signatures, the imports, and the solution. Two markers say what only the
reference may show:

    def forward_backward(x, y, w1, w2):
        '''What the student reads.'''
        # BEGIN SOLUTION
        ...the solution...
        # END SOLUTION

    import torch.nn.functional as F  # SOLUTION
    def _helper(x):  # SOLUTION
        ...

- A block between `# BEGIN SOLUTION` and `# END SOLUTION` comment lines becomes, inside a
  function or method, `raise NotImplementedError("<qualname>: <text>")` at the block's
  indentation; `<text>` is what follows `# BEGIN SOLUTION:` on the marker line, by default
  "not implemented yet (see its docstring)". At module or class level it is left out.
- A statement whose first line ends with the comment `# SOLUTION` (an import, a constant, a
  private helper function or class, with the comment lines right above it) is left out.

Everything else is copied as it is. Where something is left out between blank lines, the
blank lines after it are kept and those before it dropped, and a raise that would pass the
course's line length is wrapped as ruff format wraps it: a formatted reference gives a
formatted stub.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (Gradescope's Ubuntu 22.04 image)
    import tomli as tomllib

# The text of the raise when the marker gives none.
DEFAULT_TEXT = "not implemented yet (see its docstring)"
# ruff's and black's default, where the course's pyproject.toml sets none.
DEFAULT_LINE_LENGTH = 88
BEGIN = re.compile(r"#+ *BEGIN SOLUTION(?P<rest>.*)$")
END = re.compile(r"#+ *END SOLUTION\s*$")
STATEMENT = re.compile(r"#+ *SOLUTION\s*$")
INDENT = 4


@dataclass(frozen=True)
class _Region:
    """Lines `first` to `last` (1-based, both included) of the reference, not in the stub."""

    first: int
    last: int
    indent: str = ""
    # Whether the stub raises there (a block inside a function), and the raise's text.
    raises: bool = False
    text: str | None = None


def has_markers(source: str) -> bool:
    """Whether `source` marks any solution (a BEGIN SOLUTION block or a `# SOLUTION` line)."""
    return any(
        BEGIN.match(text) or (not alone and STATEMENT.match(text))
        for _, _, text, alone in _comments(source, "<source>")
    )


def make_stub(
    source: str, *, where: str = "<reference>", line_length: int = DEFAULT_LINE_LENGTH
) -> str:
    """The students' stub of the reference `source` (see the module's docstring)."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as error:
        raise ConfigError(f"{where}: cannot be parsed: {error}") from None
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    after = 0  # the lines before this (0-based) are written or left out
    for region in _regions(source, tree, where):
        out.extend(lines[after : region.first - 1])
        qualname = _innermost(_function_scopes(tree), region.first) if region.raises else None
        if qualname is not None:
            message = f"{qualname}: {region.text or DEFAULT_TEXT}"
            out.extend(_raise_lines(region.indent, message, line_length))
        elif _blank(out[-1:]) and _blank(lines[region.last : region.last + 1]):
            while out and _blank(out[-1:]):
                out.pop()
        after = region.last
    out.extend(lines[after:])
    stub = "".join(out).strip("\n")
    stub = stub + "\n" if stub else ""
    try:
        ast.parse(stub)
    except SyntaxError as error:
        raise ConfigError(
            f"{where}: its stub would not be valid Python ({error.msg}, line {error.lineno} of "
            "the stub): leave a statement in every body the markers empty, or mark the whole "
            "body with # BEGIN SOLUTION / # END SOLUTION"
        ) from None
    return stub


def _blank(lines: list[str]) -> bool:
    return not lines or not lines[0].strip()


def _comments(source: str, where: str) -> list[tuple[int, int, str, bool]]:
    """(line, column, text, alone on its line) of every comment of `source`."""
    comments = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                comments.append((token.start[0], token.start[1], token.string, alone))
    except (tokenize.TokenError, SyntaxError) as error:
        raise ConfigError(f"{where}: cannot be read as Python: {error}") from None
    return comments


def _regions(source: str, tree: ast.Module, where: str) -> list[_Region]:
    """What the markers leave out of the stub, in order; overlapping or unpaired markers raise."""
    lines = source.splitlines()
    starts = _statement_starts(tree)
    regions: list[_Region] = []
    begun: tuple[int, str, str | None] | None = None
    for line, column, comment, alone in _comments(source, where):
        if not alone:
            if STATEMENT.match(comment):
                regions.append(_statement_region(lines, starts, line, where))
            continue
        if match := BEGIN.match(comment):
            if begun is not None:
                raise ConfigError(
                    f"{where} line {line}: BEGIN SOLUTION inside the block begun on line "
                    f"{begun[0]}; close that one first with # END SOLUTION"
                )
            rest = match.group("rest").strip()
            if rest and not rest.startswith(":"):
                raise ConfigError(
                    f"{where} line {line}: write `# BEGIN SOLUTION` or "
                    f"`# BEGIN SOLUTION: <what the stub's raise says>`, not {comment!r}"
                )
            begun = (line, lines[line - 1][:column], rest[1:].strip() or None)
        elif END.match(comment):
            if begun is None:
                raise ConfigError(f"{where} line {line}: END SOLUTION without a BEGIN SOLUTION")
            first, indent, text = begun
            regions.append(_Region(first, line, indent, raises=True, text=text))
            begun = None
    if begun is not None:
        raise ConfigError(
            f"{where} line {begun[0]}: BEGIN SOLUTION is never closed with # END SOLUTION"
        )
    regions.sort(key=lambda region: region.first)
    for earlier, later in itertools.pairwise(regions):
        if later.first <= earlier.last:
            raise ConfigError(
                f"{where} line {later.first}: a solution marker inside the solution of line "
                f"{earlier.first}; one marker is enough"
            )
    return regions


def _statement_region(
    lines: list[str], starts: dict[int, tuple[int, int]], line: int, where: str
) -> _Region:
    """The statement a `# SOLUTION` comment on `line` marks, with its comments above."""
    if line not in starts:
        raise ConfigError(
            f"{where} line {line}: `# SOLUTION` marks a statement on its first line; put it "
            "there, or use # BEGIN SOLUTION / # END SOLUTION"
        )
    first, last = starts[line]
    return _Region(_with_comments_above(lines, first), last)


def _statement_starts(tree: ast.Module) -> dict[int, tuple[int, int]]:
    """First line -> (first line with decorators, last line) of the outermost statement there."""
    starts: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            decorators = getattr(node, "decorator_list", [])
            first = min([node.lineno, *(d.lineno for d in decorators)])
            span = (first, node.end_lineno or node.lineno)
            if first not in starts or span[1] > starts[first][1]:
                starts[first] = span
    return starts


def _with_comments_above(lines: list[str], first: int) -> int:
    """`first`, moved up over the comment lines right above it (they belong to it)."""
    while first > 1 and lines[first - 2].lstrip().startswith("#"):
        first -= 1
    return first


def _function_scopes(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and method."""
    scopes: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    scopes.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return scopes


def _innermost(scopes: list[tuple[int, int, str]], line: int) -> str | None:
    """The qualified name of the innermost function whose body holds `line`, if any."""
    holding = [(first, name) for first, last, name in scopes if first < line <= last]
    return max(holding)[1] if holding else None


def _raise_lines(indent: str, message: str, line_length: int) -> list[str]:
    """`raise NotImplementedError("message")`, wrapped as ruff format wraps a long call."""
    literal = '"' + message.replace("\\", "\\\\").replace('"', '\\"') + '"'
    one_line = f"{indent}raise NotImplementedError({literal})\n"
    if len(one_line) - 1 <= line_length:
        return [one_line]
    return [
        f"{indent}raise NotImplementedError(\n",
        f"{indent}{' ' * INDENT}{literal}\n",
        f"{indent})\n",
    ]


def course_line_length(course_root: Path) -> int:
    """The line length the course formats with: its pyproject.toml's [tool.ruff], else 88."""
    pyproject = course_root / "pyproject.toml"
    try:
        settings = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_LINE_LENGTH
    length = settings.get("tool", {}).get("ruff", {}).get("line-length", DEFAULT_LINE_LENGTH)
    return length if isinstance(length, int) and length > 0 else DEFAULT_LINE_LENGTH
