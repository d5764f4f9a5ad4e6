"""Extract each part's code from a notebook: the only module that reads .ipynb files.

The convention (also in the student README): a code cell belongs to a part when it carries
the cell tag `part:<part_id>` or its first line is the marker comment `# part: <part_id>`.
The walkthrough ships one such cell per part that only imports from the part's .py file;
a cell that does nothing but that means "grade the .py file". A marked cell with more code
that still imports from the part's own module is graded as Jupyter runs it: the .py file,
then the cell's code, whose definitions replace the file's. Any other marked cell with real
code replaces the part's .py file entirely (notebook code wins). The grader says which.

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

`check` and `submit` (grader/notebook/kernel.py) are what a student calls from a cell of the
running notebook: the cells the kernel ran become a notebook read by this same machinery, in
a `python -m grader` child process.
"""

from grader.notebook.cells import (
    MARKER,
    MAX_CELL_BRACES,
    MAX_CELL_CHARS,
    MAX_CELL_STATEMENTS,
    MAX_CELLS,
    MAX_STATEMENTS,
    TAG_PREFIX,
    Cell,
    cell_part,
    read_cells,
    strip_magics,
)
from grader.notebook.kernel import check, submit
from grader.notebook.origin import (
    MAX_ORIGIN_CHARS,
    NotebookOrigin,
    explain_missing_names,
    point_at_cells,
    read_origin,
)
from grader.notebook.parts import NotebookParts, merge_notebook_parts

__all__ = [
    "MARKER",
    "MAX_CELLS",
    "MAX_CELL_BRACES",
    "MAX_CELL_CHARS",
    "MAX_CELL_STATEMENTS",
    "MAX_ORIGIN_CHARS",
    "MAX_STATEMENTS",
    "TAG_PREFIX",
    "Cell",
    "NotebookOrigin",
    "NotebookParts",
    "cell_part",
    "check",
    "explain_missing_names",
    "merge_notebook_parts",
    "point_at_cells",
    "read_cells",
    "read_origin",
    "strip_magics",
    "submit",
]
