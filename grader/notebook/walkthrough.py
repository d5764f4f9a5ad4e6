"""An assignment's walkthrough notebook, rendered from its manifest and its stubs.

The author writes the prose and the demonstrations once, in the manifest's `[walkthrough]`
table (docs/authoring.md, section 9); everything the grader relies on is generated here, the
same for every assignment:

    a set-up cell for Google Colab (installs the kit; does nothing elsewhere)
    [walkthrough] intro, with how to work in the notebook
    a code cell: `from grader.notebook import check, submit`, autoreload, then `setup`
    per part, in the manifest's order:
        [walkthrough.parts.<id>] intro (default: "## Part N: `file.py`")
        the part's cell: tag `part:<id>`, first line `# part: <id>`, and an import of the
            public functions and classes its stub defines
        `check("<id>")`
        [walkthrough.parts.<id>] cells, the demonstrations
    `check()` and `submit()`, under a heading that says what they do

Cell ids are fixed and no outputs are written, so an unchanged template renders
byte-identical notebooks, and `validate` can say when the committed one is out of date.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from grader.course.manifest import Assignment
from grader.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (Gradescope's Ubuntu 22.04 image)
    import tomli as tomllib

# nbformat has no type annotations: its functions are called through this name.
_nbformat: Any = nbformat

TABLE = "walkthrough"
# What `ruff format` keeps on one line (the project's line length), for the part cell's import.
LINE_LENGTH = 100
WALKTHROUGH_KEYS = frozenset({"intro", "setup", "parts"})
PART_KEYS = frozenset({"intro", "cells"})

HOW_TO_WORK = """\
**How to work.** Each part has one cell marked `# part: <part_id>`. By default it
imports your functions from the part's file (for example `{example}`, next to
this notebook), so you can write your code there and use this notebook to try it out.
Or replace that cell's import with your own code: the grader then takes the code from
the cell. Either way, keep the function names and signatures of the docstrings in the
`.py` files.

Run the notebook top to bottom. It stops at the first part that is not implemented yet,
with that function's `NotImplementedError`. Below each part's cell, `check("<part_id>")`
runs that part's public tests on the code as you ran it (no need to save first), the same
tests and feedback as `python -m grader check`; `check()` at the end runs every part's.

**In Google Colab**, run the first cell before anything else: it installs the kit."""

SETUP_PREAMBLE = """\
from grader.notebook import check, submit

# Reload your .py files when they change, so edits show up without restarting.
%load_ext autoreload
%autoreload 2"""

CHECK_CELL = """\
# This part's public tests, on your code as you ran it (run the cell above first).
check("{part_id}")"""

SUBMIT_MARKDOWN = """\
## Check everything, then submit

`check()` runs the public tests of every part on the code as you ran it. `submit()` writes
the zip to upload to Gradescope and says where it is (in Colab it also downloads it). It
zips the notebook **as saved**: save it first (File > Save, or Ctrl+S / Cmd+S); in Colab
it takes the notebook as it is now."""


@dataclass(frozen=True)
class PartSection:
    intro: str
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Template:
    """The `[walkthrough]` table: what the author writes."""

    intro: str
    setup: str
    parts: dict[str, PartSection]


def has_template(assignment: Assignment) -> bool:
    """Whether the manifest has a `[walkthrough]` table (else the notebook is written by hand)."""
    return TABLE in _manifest(assignment)


def read_template(assignment: Assignment) -> Template:
    """The `[walkthrough]` table, checked: every key known, every part one of the manifest's."""
    where = f"{assignment.directory / 'assignment.toml'}: [{TABLE}]"
    table = _manifest(assignment).get(TABLE)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is missing; add it to render the walkthrough notebook.")
    _known_keys(table, WALKTHROUGH_KEYS, where)
    sections = table.get("parts", {})
    if not isinstance(sections, dict):
        raise ConfigError(f"{where} parts must be tables, [{TABLE}.parts.<part_id>].")
    part_ids = [part.id for part in assignment.parts]
    unknown = sorted(set(sections) - set(part_ids))
    if unknown:
        raise ConfigError(
            f"{where}.parts names {', '.join(unknown)}, not a part of {assignment.id} "
            f"({', '.join(part_ids)}); rename the table to the part's id."
        )
    parts: dict[str, PartSection] = {}
    for part_id, section in sections.items():
        if not isinstance(section, dict):
            raise ConfigError(f"{where}.parts.{part_id} must be a table.")
        _known_keys(section, PART_KEYS, f"{where}.parts.{part_id}")
        cells = section.get("cells", [])
        if not isinstance(cells, list) or not all(isinstance(cell, str) for cell in cells):
            raise ConfigError(f"{where}.parts.{part_id} cells must be a list of strings.")
        parts[part_id] = PartSection(
            intro=_text(section, "intro", f"{where}.parts.{part_id}"),
            cells=tuple(_clean(cell) for cell in cells),
        )
    return Template(
        intro=_text(table, "intro", where), setup=_text(table, "setup", where), parts=parts
    )


def render_walkthrough(assignment: Assignment) -> str:
    """The notebook's text, as `write_walkthrough` writes it."""
    template = read_template(assignment)
    cells: list[Any] = []

    def add(cell: Any) -> None:
        # nbformat gives new cells random ids; fixed ones keep the file reproducible.
        cell["id"] = f"cell-{len(cells) + 1:02d}"
        cells.append(cell)

    add(_nbformat.v4.new_code_cell(colab_setup_source(assignment.id)))
    intro = template.intro or f"# {assignment.title}"
    add(
        _nbformat.v4.new_markdown_cell(
            f"{intro}\n\n{HOW_TO_WORK.format(example=assignment.parts[0].file)}"
        )
    )
    add(_nbformat.v4.new_code_cell("\n\n".join(filter(None, [SETUP_PREAMBLE, template.setup]))))
    for number, part in enumerate(assignment.parts, start=1):
        section = template.parts.get(part.id, PartSection(intro="", cells=()))
        add(_nbformat.v4.new_markdown_cell(section.intro or f"## Part {number}: `{part.file}`"))
        add(
            _nbformat.v4.new_code_cell(
                part_cell_source(assignment, part.id), metadata={"tags": [f"part:{part.id}"]}
            )
        )
        add(_nbformat.v4.new_code_cell(CHECK_CELL.format(part_id=part.id)))
        for source in section.cells:
            add(_nbformat.v4.new_code_cell(source))
    add(_nbformat.v4.new_markdown_cell(SUBMIT_MARKDOWN))
    add(_nbformat.v4.new_code_cell("check()"))
    add(_nbformat.v4.new_code_cell("submit()"))

    notebook = _nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    _nbformat.validate(notebook)
    text = str(_nbformat.writes(notebook))
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write ends its file


def walkthrough_path(assignment: Assignment) -> Path:
    """Where the notebook goes: the manifest's `notebook`."""
    if not assignment.notebook:
        raise ConfigError(
            f"{assignment.directory / 'assignment.toml'} has a [{TABLE}] table but no notebook "
            'to write it to: add notebook = "walkthrough.ipynb" to [assignment].'
        )
    return assignment.directory / assignment.notebook


def write_walkthrough(assignment: Assignment) -> Path:
    """Render the walkthrough from the manifest and the stubs, write it, and return its path."""
    path = walkthrough_path(assignment)
    text = render_walkthrough(assignment)
    path.write_text(text, encoding="utf-8")
    return path


def walkthrough_problems(assignment: Assignment) -> list[str]:
    """Why the committed walkthrough is not what its template renders (none when it is)."""
    if not has_template(assignment):
        return []
    try:
        path = walkthrough_path(assignment)
        wanted = render_walkthrough(assignment)
    except ConfigError as error:
        return [str(error)]
    rebuild = f"python -m grader build notebook -a {assignment.id}"
    try:
        committed = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return [f"{path.name} is missing or unreadable: write it with {rebuild}"]
    if committed != wanted:
        return [
            f"{path.name} is out of date with [{TABLE}] in assignment.toml and the stubs: "
            f"rewrite it with {rebuild}, then commit it (edit the template, not the notebook)"
        ]
    return []


def part_cell_source(assignment: Assignment, part_id: str) -> str:
    """A part's marked cell: the marker line, then an import of what its stub defines."""
    part = assignment.part(part_id)
    names = stub_names(assignment.directory / part.file)
    if not names:
        raise ConfigError(
            f"{assignment.directory / part.file} defines no public function or class for the "
            f"walkthrough's {part_id} cell to import."
        )
    line = f"from {part.module} import {', '.join(names)}"
    if len(line) > LINE_LENGTH:  # wrapped as `ruff format` writes it
        line = f"from {part.module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
    return "\n".join(
        [
            f"# part: {part_id}",
            f"# Write your code in {part.file}, or replace the import below with your own code.",
            line,
        ]
    )


def stub_names(stub: Path) -> list[str]:
    """The public functions and classes a stub defines at its top level, sorted."""
    try:
        tree = ast.parse(stub.read_text(encoding="utf-8"), filename=str(stub))
    except (OSError, SyntaxError, ValueError) as error:
        raise ConfigError(f"{stub}: cannot read the stub for the walkthrough: {error}") from error
    return sorted(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    )


def colab_setup_source(assignment_id: str) -> str:
    """A walkthrough's first cell: in Colab, installs the kit and moves into it; elsewhere nothing.

    The kit is the zip `build starter` writes (one top folder named after the assignment),
    uploaded to Colab's files, kept unzipped in Google Drive (MyDrive), or, when neither is
    there, asked for with Colab's upload button. pip installs the kit with everything its
    pyproject.toml declares; Colab's own torch is kept, as it satisfies the grader's range.
    """
    return f'''\
# Google Colab only: this cell does nothing elsewhere. Upload {assignment_id}_starter.zip
# with the Files pane on the left (or keep the unzipped {assignment_id} folder in Google
# Drive, under MyDrive), then run it: it installs the kit and moves into your files.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess
    import zipfile
    from pathlib import Path

    kit = Path("/content/{assignment_id}")
    upload = Path("/content/{assignment_id}_starter.zip")
    if not kit.is_dir() and not upload.is_file():
        from google.colab import drive

        drive.mount("/content/drive")
        if Path("/content/drive/MyDrive/{assignment_id}").is_dir():
            kit = Path("/content/drive/MyDrive/{assignment_id}")
    if not kit.is_dir() and not upload.is_file():
        from google.colab import files

        print("Choose {assignment_id}_starter.zip on your computer.")
        os.chdir("/content")
        files.upload()
    if not kit.is_dir():
        zipfile.ZipFile(upload).extractall("/content")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", str(kit)], check=True)
    sys.path.insert(0, str(kit))
    os.chdir(kit / "assignments" / "{assignment_id}")'''


def _manifest(assignment: Assignment) -> dict[str, Any]:
    path = assignment.directory / "assignment.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the manifest: {error}") from error


def _known_keys(table: dict[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {', '.join(unknown)}; the keys are {', '.join(sorted(known))}."
        )


def _text(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f"{where} {key} must be a string (''' ... ''' for several lines).")
    return _clean(value)


def _clean(text: str) -> str:
    """A cell's text without the blank lines a TOML multi-line string leaves around it."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
