"""Reading a notebook's cells: bounded, tolerant of damage, IPython syntax made Python."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass
class _LineEnd:
    """Where Python's reading stands at the end of a physical line of a cell."""

    # The quote of a string still open (a triple quote, or one continued by a backslash).
    string: str | None
    # Brackets still open.
    depth: int
    # The line ends with a backslash that joins the next line to it.
    joined: bool
    # The last character of code on the line, outside strings ("#" when a comment ends it).
    last: str

    @property
    def ends_statement(self) -> bool:
        return self.string is None and self.depth == 0 and not self.joined


def strip_magics(source: str) -> str:
    """Replace IPython-only input by Python, keeping line numbers, blocks and string contents.

    Only lines where a statement starts are read as IPython's, as IPython does: a line inside
    brackets, a string or after a backslash is Python. A line magic (`%time f()`), shell
    escape (`!ls`, `!!ls`) or help request (`?obj`, `??obj`, `obj?`, `obj.attr??`) becomes
    `pass` (its continuation lines become blank), `x = %time f()` and `x = !ls` assign None,
    and a cell magic whose body is not Python (`%%bash`) empties the cell.
    """
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in PYTHON_CELL_MAGICS:
            return ""  # %%bash, %%writefile, ...: the cell is not Python at all
        lines[first] = "# IPython cell magic dropped by the grader"
    number = 0
    while number < len(lines):
        line = lines[number]
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        escape = stripped.startswith(("%", "!", "?")) and not stripped.startswith("!=")
        assignment = None if escape else MAGIC_ASSIGNMENT.match(line)
        if escape or assignment:
            # IPython reads the rest of the line as the magic's or the shell's, joined to the
            # next line only by a final backslash.
            end = number
            while end + 1 < len(lines) and lines[end].endswith("\\"):
                end += 1
            if assignment and not _asks_for_help(lines[number : end + 1], None):
                names = assignment.group(2)
                kept = f"{assignment.group(1)}{names} = None  # IPython value dropped"
            else:
                kept = indent + DROPPED
            lines[number : end + 1] = [kept] + [""] * (end - number)
            number = end + 1
            continue
        end, state = number, _scan_line(line, None, 0)
        while not state.ends_statement and end + 1 < len(lines):
            end += 1
            state = _scan_line(lines[end], state.string, state.depth)
        if _asks_for_help(lines[number : end + 1], state):
            lines[number : end + 1] = [indent + DROPPED] + [""] * (end - number)
        number = end + 1
    return "\n".join(lines)


def _asks_for_help(statement: list[str], end: _LineEnd | None) -> bool:
    """True when IPython reads the statement's lines as `obj?` or `obj??`: help on obj.

    `end` is how its last line ends, None to read that line alone (after a magic or shell
    escape, whose text is not Python). IPython looks for a `?` as the last token, then
    `%{0,2}NAME(.NAME)*` and `?` or `??` at the end of the statement, a NAME being word
    characters or `*`, the first not starting with a digit. Checked from the end, in linear
    time (a regular expression searched from every start is quadratic).
    """
    if (end or _scan_line(statement[-1], None, 0)).last != "?":
        return False
    body = "\n".join(statement).rstrip()
    body = body[:-2] if body.endswith("??") else body[:-1]
    start = len(body)
    while start > 0 and (body[start - 1] in "*._" or body[start - 1].isalnum()):
        start -= 1
    target = body[start:]
    if not target or target.endswith("."):
        return False
    names = target[target.rfind("..") + 2 :] if ".." in target else target
    return any(char not in "." and not char.isdecimal() for char in names)


def _scan_line(line: str, string: str | None, depth: int) -> _LineEnd:
    """Read one physical line as Python's tokenizer would, from an open `string` and `depth`."""
    position, last = 0, ""
    while position < len(line) or string is not None:
        if string is not None:
            end = line.find(string, position)
            while end > 0 and _escaped(line, end):
                end = line.find(string, end + 1)
            if end < 0:
                # A one-quote string goes on past the line only after a backslash.
                open_string = string if len(string) == 3 or _escaped(line, len(line)) else None
                return _LineEnd(open_string, depth, False, last)
            position, string, last = end + len(string), None, "'"
            continue
        char = line[position]
        if char == "#":
            return _LineEnd(None, depth, False, "#")
        if char in "'\"":
            string = char * 3 if line.startswith(char * 3, position) else char
            position += len(string)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        if not char.isspace():
            last = char
        position += 1
    return _LineEnd(None, depth, line.endswith("\\"), last)


def _escaped(line: str, index: int) -> bool:
    backslashes = 0
    while index - backslashes - 1 >= 0 and line[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1
