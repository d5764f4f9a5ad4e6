"""Extract each part's code from a notebook: the only module that reads .ipynb files.

A cell belongs to a part when it carries the cell tag `part:<part_id>` or its first line
is the marker comment `# part: <part_id>`. The walkthrough ships such a cell per part that
only imports from the part's .py file: a cell that does nothing but that means "grade the
.py file". A cell with real code wins over the .py file, and the grader says so.

IPython magics and shell escapes (`%timeit`, `!pip install`) are replaced by `pass`, and
the notebook's top-level imports from untagged cells (`import torch`, ...) are put in
front of the extracted code so it runs as the notebook ran it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import nbformat

from grader.assignment import Assignment
from grader.errors import SubmissionError

TAG_PREFIX = "part:"
MARKER = re.compile(r"^#\s*part:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
HEADER = "# Extracted from the notebook by the grader.\n"


@dataclass(frozen=True)
class NotebookParts:
    """The sources after merging the notebook in, and where each part's code came from."""

    sources: dict[str, bytes]
    origin: dict[str, str]
    notes: list[str] = field(default_factory=list)


def cell_part(cell: nbformat.NotebookNode) -> str | None:
    """The part id a code cell is marked for, if any."""
    for tag in cell.get("metadata", {}).get("tags", []):
        if isinstance(tag, str) and tag.startswith(TAG_PREFIX):
            return tag[len(TAG_PREFIX) :].strip()
    first_line = cell.source.lstrip().split("\n", 1)[0] if cell.source else ""
    match = MARKER.match(first_line)
    return match.group(1) if match else None


def strip_magics(source: str) -> str:
    """Replace IPython-only lines by `pass` at the same indentation, keeping blocks valid."""
    if source.lstrip().startswith("%%"):
        return ""  # a cell magic makes the whole cell non-Python
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            lines.append(line[: len(line) - len(stripped)] + "pass  # IPython line dropped")
        else:
            lines.append(line)
    return "\n".join(lines)


def _only_imports_own_files(source: str, own_modules: set[str]) -> bool:
    """True when the cell does nothing but import from the assignment's own .py files."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in own_modules:
            continue
        if isinstance(node, ast.Import) and all(a.name in own_modules for a in node.names):
            continue
        return False
    return True


def _setup_imports(cells: list[nbformat.NotebookNode], own_modules: set[str]) -> list[str]:
    imports: list[str] = []
    for cell in cells:
        try:
            tree = ast.parse(strip_magics(cell.source))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    {node.module or ""}
                    if isinstance(node, ast.ImportFrom)
                    else {alias.name for alias in node.names}
                )
                if not names & own_modules:
                    line = ast.get_source_segment(strip_magics(cell.source), node)
                    if line and line not in imports:
                        imports.append(line)
    return imports


def merge_notebook_parts(
    data: bytes, assignment: Assignment, file_sources: dict[str, bytes]
) -> NotebookParts:
    """Merge a notebook's marked cells into `file_sources` (notebook code wins, with a note)."""
    try:
        notebook = nbformat.reads(data.decode("utf-8-sig"), as_version=4)  # type: ignore[no-untyped-call]
    except Exception as error:  # nbformat raises many kinds for a damaged file
        raise SubmissionError(
            f"The notebook could not be read ({type(error).__name__}: {str(error)[:200]}); "
            "re-download it from Jupyter with File > Save and submit again."
        ) from error
    own_modules = {part.module for part in assignment.parts}
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    marked: dict[str, list[str]] = {}
    untagged: list[nbformat.NotebookNode] = []
    known = {part.id for part in assignment.parts}
    notes: list[str] = []
    for cell in code_cells:
        part_id = cell_part(cell)
        if part_id is None:
            untagged.append(cell)
        elif part_id not in known:
            notes.append(f"Notebook cell marked for unknown part {part_id!r} was ignored.")
        else:
            marked.setdefault(part_id, []).append(strip_magics(cell.source))
    sources = dict(file_sources)
    origin: dict[str, str] = {}
    imports = _setup_imports(untagged, own_modules)
    for part in assignment.parts:
        cells = marked.get(part.id, [])
        code = "\n\n".join(cells)
        if not cells or _only_imports_own_files(code, own_modules):
            continue
        if part.file in file_sources:
            notes.append(
                f"{part.id}: graded the code in the notebook cell marked part:{part.id}; "
                f"{part.file} was ignored (notebook code wins over the .py file)."
            )
        else:
            notes.append(f"{part.id}: graded the code in the notebook cell marked part:{part.id}.")
        text = HEADER + "\n".join(imports) + "\n\n" + code + "\n"
        sources[part.file] = text.encode("utf-8")
        origin[part.id] = "notebook"
    return NotebookParts(sources=sources, origin=origin, notes=notes)
