"""The source map at the head of each generated part file: written, read back, and used to
point feedback at the notebook cells the code came from."""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import partial

from grader.course.manifest import Part
from grader.notebook.cells import Cell
from grader.notebook.statements import ParsedCell, Statement

ORIGIN_PREFIX = "# grader-notebook-origin: "
# Line 1 of every generated file. Python reads an encoding declaration from line 2 only when
# line 1 has none, and line 2 quotes the student's cells (the labels): declared here, no cell
# text can choose how the file is decoded.
CODING_DECLARATION = "# -*- coding: utf-8 -*-"
MAX_ORIGIN_CHARS = 2_000_000
# The cell number of runs that come from the part's own .py file, copied in whole when the
# part's cells import it (cells are numbered from 1).
FILE_CELL = 0


@dataclass(frozen=True)
class NotebookOrigin:
    """What the header of a generated part file tells the grader about the file.

    `runs` holds (first generated line, line count, cell number, first line in the cell),
    sorted by generated line, where cell number `FILE_CELL` is the part's own .py file;
    `labels` maps a cell number to its label (`Cell.label`; the file's name for `FILE_CELL`);
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


def render_part_file(
    part: Part,
    statements: list[Statement],
    verbatim: list[ParsedCell],
    order: list[ParsedCell],
    cells: dict[int, Cell],
    missing: dict[str, str],
    problem: str = "",
    own_file: str | None = None,
) -> str:
    """The file's text: a header (`NotebookOrigin`), future imports, then the code: the part's
    .py file first when the cells import it (`own_file`), then the cells' code."""
    future = list(dict.fromkeys(s.text.strip() for p in order for s in p.statements if s.future))
    chunks: list[tuple[int, int, str]] = [(s.cell, s.line, s.text) for s in statements]
    chunks += [(p.cell.number, 1, p.code) for p in verbatim]
    chunks.sort(key=lambda chunk: (chunk[0], chunk[1]))
    header_lines = 2 + (len(future) if own_file is None else 0) + 1
    body: list[str] = []
    runs: list[list[int]] = []

    def place(cell: int, line: int, text: str) -> None:
        """Append `text`, line `line` onwards of cell `cell`, to the body and to the map."""
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

    if own_file is not None:
        # Python takes future imports only at the top of a file, where the .py file's
        # docstring and future imports stand: the cells' go right after those.
        lines = own_file.split("\n")
        top = _docstring_and_future_lines(own_file) if future else 0
        body.append(f"# {part.file}, which the cells import")
        if top:
            place(FILE_CELL, 1, "\n".join(lines[:top]))
        body.extend(future)
        place(FILE_CELL, top + 1, "\n".join(lines[top:]))
    previous_cell = -1
    for cell, line, text in chunks:
        if cell != previous_cell:
            body.append(f"# notebook cell {cell}")
            previous_cell = cell
        place(cell, line, text)
    labels = {
        str(number): part.file if number == FILE_CELL else cells[number].label
        for number in {run[2] for run in runs}
    }
    origin = {"runs": runs, "labels": labels, "missing": missing, "problem": problem}
    header = [
        f"{CODING_DECLARATION} Built by the grader from the notebook for part {part.id}: "
        + ("the part's .py file, which its cells import, then " if own_file is not None else "")
        + "definitions from the part's cells and what they use from the cells above "
        "(docs/notebooks.md).",
        ORIGIN_PREFIX + json.dumps(origin, ensure_ascii=True),
        *(future if own_file is None else []),
        "",
    ]
    return "\n".join(header + body) + "\n"


def _docstring_and_future_lines(text: str) -> int:
    """How many lines a file's leading docstring and `from __future__` imports take (0 when
    it has none, or does not parse: its syntax error is then reported where it is)."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0
    end = 0
    for index, node in enumerate(body):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        if not (docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__")):
            break
        end = node.end_lineno or node.lineno
    return end


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
    traceback frames likewise; a line copied from the part's own .py file keeps naming that
    file, with its line there. In a
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
        rewrite = partial(_rewrite, origin=origin, file_name=file_name)
        message = re.sub("|".join(patterns), rewrite, message)
    return message


def _rewrite(match: re.Match[str], origin: NotebookOrigin, file_name: str) -> str:
    groups = match.groupdict()
    if groups.get("failed") is not None:
        # The file alone is not to blame: the part's code is (also) the notebook's.
        if FILE_CELL in origin.labels:
            return f"The part's code ({file_name} and the notebook's definitions) failed to run"
        return "The part's code from the notebook failed to run"
    kind = next(k for k in ("syntax", "of", "frame", "bare") if groups.get(k) is not None)
    found = origin.locate(int(match.group(f"{kind}_line")))
    if found is None:
        return match.group(0)
    label, line = found
    if label == file_name:
        # A line of the part's own .py file: the same words, with the line in that file.
        start, end = (index - match.start() for index in match.span(f"{kind}_line"))
        return f"{match.group(0)[:start]}{line}{match.group(0)[end:]}"
    return {
        "syntax": f"notebook {label} has a syntax error on line {line}",
        "of": f"line {line} of notebook {label}",
        "frame": f'File "notebook {label}", line {line}',
        "bare": f"line {line} of notebook {label}:",
    }[kind]
