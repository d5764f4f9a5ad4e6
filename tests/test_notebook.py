"""Notebook submissions: which cells count, how a part's code is built from the cells (as
Jupyter would have run them, without the demos), feedback that names cells, bounds on
hostile notebooks, and that grading a notebook gives what grading the .py files gives.

The corpus in tests/notebooks/ holds one notebook per case (and an expected.toml): each
case that should run in Jupyter is first executed with nbclient, then graded end to end.
"""

from __future__ import annotations

import json
import shutil
import sys
import traceback
import types
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest

from grader.course.manifest import Assignment, load_assignment
from grader.errors import SubmissionError
from grader.intake.submission import prepare_submission
from grader.notebook import (
    MAX_CELL_BRACES,
    MAX_CELL_CHARS,
    MAX_CELL_STATEMENTS,
    MAX_CELLS,
    MAX_STATEMENTS,
    Cell,
    NotebookOrigin,
    NotebookParts,
    cell_part,
    explain_missing_names,
    merge_notebook_parts,
    point_at_cells,
    read_origin,
    strip_magics,
)
from tests.support import (
    ASSIGNMENT_DIR,
    PART_FILES,
    SOLUTIONS_DIR,
    copy_part_files,
    grade_to_report,
    notebook_with_part_code,
    part_scores,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETUP = "%matplotlib inline\nimport math\nimport matplotlib.pyplot as plt\nimport torch\nN = 64\n"
CORPUS = Path(__file__).resolve().parent / "notebooks"
POINTS = {part.id: part.points for part in load_assignment("pytorch_basics").parts}


@pytest.fixture(scope="module")
def assignment() -> Assignment:
    return load_assignment("pytorch_basics")


def notebook_bytes(*cells: nbformat.NotebookNode) -> bytes:
    notebook = nbformat.v4.new_notebook(cells=list(cells))
    text: str = nbformat.writes(notebook)
    return text.encode("utf-8")


def code(source: str, *tags: str) -> nbformat.NotebookNode:
    cell: nbformat.NotebookNode = nbformat.v4.new_code_cell(
        source, metadata={"tags": list(tags)} if tags else {}
    )
    return cell


def extract(
    assignment: Assignment, *cells: nbformat.NotebookNode, files: dict[str, bytes] | None = None
) -> NotebookParts:
    return merge_notebook_parts(notebook_bytes(*cells), assignment, files or {})


def built(merged: NotebookParts, name: str) -> str:
    return merged.sources[name].decode()


def run_built(merged: NotebookParts, name: str) -> dict[str, Any]:
    """Execute a built part file as the sandbox imports it (in sys.modules while it runs, so
    that it can import itself); return its namespace."""
    module = types.ModuleType(name.removesuffix(".py"))
    sys.modules[module.__name__] = module
    try:
        exec(compile(built(merged, name), name, "exec"), vars(module))
    finally:
        del sys.modules[module.__name__]
    return vars(module)


# -- which cells belong to a part ------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "tags", "expected"),
    [
        ("x = 1", ["part:autograd_loop"], "autograd_loop"),
        ("# part: manual_backprop\nx = 1", ["part:autograd_loop"], "autograd_loop"),
        ("# part: manual_backprop\nx = 1", [], "manual_backprop"),
        ("\n\n#part:manual_backprop  \nx = 1", [], "manual_backprop"),
        ("x = 1\n# part: manual_backprop", [], None),
        ("# part: manual_backprop, my first try", [], None),
        ("# parts are fun", ["other-tag"], None),
    ],
    ids=[
        "tag",
        "tag-wins",
        "marker",
        "marker-after-blank-lines",
        "marker-not-first",
        "extra-text",
        "none",
    ],
)
def test_cell_part(source: str, tags: list[str], expected: str | None) -> None:
    assert cell_part(Cell(1, "code", source, tuple(tags))) == expected


# -- IPython syntax ------------------------------------------------------------------


def test_line_magics_and_shell_escapes_become_pass_keeping_lines() -> None:
    source = "%timeit f()\n!pip install torch\nfor i in range(3):\n    %time g(i)\nx = 1"
    cleaned = strip_magics(source)
    assert cleaned.count("\n") == source.count("\n")
    assert "%" not in cleaned.replace("# IPython", "") and "!pip" not in cleaned
    compile(cleaned, "cell", "exec")  # the loop still has a body


def test_magic_lookalikes_inside_strings_are_kept() -> None:
    source = 'text = """\n!not a shell escape\n%not a magic\n"""\nshare = "50% # !"'
    assert strip_magics(source) == source


def test_values_from_ipython_become_none() -> None:
    assert strip_magics("files = !ls").startswith("files = None")
    compile(strip_magics("a, b = %time f()"), "cell", "exec")


def test_cell_magics() -> None:
    assert strip_magics("%%bash\nls -l\n") == ""
    timed = strip_magics("%%time\nx = 1\n")
    assert timed.splitlines()[1] == "x = 1"
    compile(timed, "cell", "exec")


def test_help_requests_become_pass_keeping_lines() -> None:
    source = (
        "torch.clamp?\n?torch.mm\n??torch.mm\nforward_backward??\nx = obj?\ntorch.*clamp*?\n"
        "def f():\n    torch.clamp?\nfoo(a,\n    b).attr?\nfiles = !ls what?\nkept = 1"
    )
    cleaned = strip_magics(source)
    assert cleaned.count("\n") == source.count("\n")
    assert "?" not in cleaned and "x = " not in cleaned and "files" not in cleaned
    assert cleaned.endswith("\nkept = 1")
    compile(cleaned, "cell", "exec")  # the function still has a body


def test_question_marks_in_strings_comments_and_bad_help_are_kept() -> None:
    source = "s = 'what?'\nt = 1  # why?\nu = f'{x}?'\nv = '''\n?not help\nobj?\n'''\n"
    assert strip_magics(source) == source
    # IPython refuses these too: the student sees the syntax error on that line.
    assert strip_magics("f(x)?") == "f(x)?" and strip_magics("x = [1,\n 2]?") == "x = [1,\n 2]?"


def test_lines_inside_brackets_or_after_a_backslash_are_python() -> None:
    source = "x = (a\n     % b)\ny = (c\n     != d)\nz = 1 + \\\n    ?2\n"
    assert strip_magics(source) == source
    # A shell escape goes on over a final backslash, and that line is IPython's too.
    assert strip_magics("!echo (\\\n  ?more\nx = 1").split("\n")[1:] == ["", "x = 1"]


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ntorch.clamp?\n?torch.mm\nx = 1",
        "x = (a\n     % b)\n%time f()\ny = obj??",
        "def f():\n    g?\n    return 1\nfiles = !ls\ns = 'a?'  # b?",
        'text = """\n!not\n?not\n"""\nv = %timeit g()\nk = x.y?',
    ],
)
def test_the_lines_ipython_transforms_are_the_lines_dropped(source: str) -> None:
    transformer = pytest.importorskip("IPython.core.inputtransformer2")
    by_ipython = transformer.TransformerManager().transform_cell(source).rstrip("\n").split("\n")
    ours = strip_magics(source).split("\n")
    assert len(by_ipython) == len(ours)
    for original, theirs, mine in zip(source.split("\n"), by_ipython, ours, strict=True):
        assert ("get_ipython()" in theirs) == (mine != original), (original, theirs, mine)


# -- merging into the submission --------------------------------------------------------


def test_default_import_cell_means_the_py_file(assignment: Assignment) -> None:
    files = {"manual_backprop.py": b"def forward_backward(): ...\n"}
    cell = code(
        "# part: manual_backprop\n# Write your code in manual_backprop.py.\n"
        "from manual_backprop import forward_backward, train_manual",
        "part:manual_backprop",
    )
    merged = extract(assignment, cell, files=files)
    assert merged.sources == files and merged.origin == {} and merged.notes == []
    # Handed in without the .py file: the part is missing, and the note says why.
    alone = extract(assignment, cell, files={})
    assert alone.sources == {} and alone.notes == [
        "The notebook's part:manual_backprop cells only import manual_backprop.py, which is "
        "not in the submission: hand in manual_backprop.py with the notebook, or write the "
        "part's code in its marked cell."
    ]


def test_notebook_code_wins_and_says_so(assignment: Assignment) -> None:
    cell = code("# part: autograd_loop\ndef train_autograd():\n    return []\n")
    with_file = extract(assignment, cell, files={"autograd_loop.py": b"old\n"})
    assert with_file.origin == {"autograd_loop": "notebook"}
    assert b"def train_autograd" in with_file.sources["autograd_loop.py"]
    assert with_file.notes == [
        "autograd_loop: graded the code in the notebook cell marked part:autograd_loop; "
        "autograd_loop.py was ignored (notebook code wins over the .py file)."
    ]
    without_file = extract(assignment, cell)
    assert "there is no autograd_loop.py" in without_file.notes[0]


def test_extracted_code_gets_only_the_setup_imports_it_uses(assignment: Assignment) -> None:
    part = code(
        "# part: autograd_loop\nfrom __future__ import annotations\n"
        "def train_autograd(x: torch.Tensor) -> list[float]:\n    return [math.pi]\n"
    )
    merged = extract(assignment, code(SETUP), part)
    text = merged.sources["autograd_loop.py"].decode().split("\n", 2)[2]  # after the header
    assert "import math" in text and "matplotlib" not in text and "%" not in text
    # `from __future__` must stay first, in front of the imports the grader adds.
    assert text.index("from __future__") < text.index("import math")
    compile(text, "autograd_loop.py", "exec")


def test_own_file_import_is_dropped_and_missing_names_noted(assignment: Assignment) -> None:
    part = code(
        "# part: manual_backprop\nfrom manual_backprop import train_manual, forward_backward\n"
        "def forward_backward(x, y, w1, w2):\n    return None\n"
    )
    merged = extract(assignment, part)
    text = merged.sources["manual_backprop.py"].decode()
    assert "from manual_backprop" not in text
    assert any(
        "imports train_manual from manual_backprop.py, but its code replaces" in note
        for note in merged.notes
    )


# -- a part cell that imports its own .py file: that file runs first, as in Jupyter ------

OWN_FILE = (
    '"""Manual backprop, as submitted."""\n'
    "\n"
    "from __future__ import annotations\n"
    "\n"
    "\n"
    "def forward_backward(x, y, w1, w2) -> str:\n"
    '    return "file"\n'
    "\n"
    "\n"
    "def train_manual(x, y, w1, w2) -> str:\n"
    '    return "file"\n'
)


def test_a_cell_that_imports_its_file_is_graded_as_the_file_then_the_cell(
    assignment: Assignment,
) -> None:
    cell = code(
        "# part: manual_backprop\nfrom manual_backprop import forward_backward, train_manual\n"
        "LEARNING_RATE = 1e-6\n"
        "def train_manual(x, y, w1, w2):\n"
        "    return [forward_backward(x, y, w1, w2), LEARNING_RATE]\n"
        "train_manual(1, 2, 3, 4)\n"
    )
    merged = extract(assignment, cell, files={"manual_backprop.py": OWN_FILE.encode()})
    assert merged.origin == {"manual_backprop": "notebook"}
    namespace = run_built(merged, "manual_backprop.py")
    # forward_backward comes from the file; the cell's train_manual replaces the file's.
    assert namespace["forward_backward"](1, 2, 3, 4) == "file"
    assert namespace["train_manual"](1, 2, 3, 4) == ["file", 1e-6]
    assert namespace["__doc__"] == "Manual backprop, as submitted."
    assert merged.notes[0] == (
        "manual_backprop: graded manual_backprop.py followed by the definitions in the notebook "
        "cell marked part:manual_backprop, as Jupyter runs that cell: its import of "
        "manual_backprop runs the file, then what the cell defines (LEARNING_RATE, "
        "train_manual) replaces anything of the same name."
    )
    assert "`train_manual(1, 2, 3, 4)`, was not run" in merged.notes[1]
    assert len(merged.notes) == 2  # nothing said missing: the file defines forward_backward


@pytest.mark.parametrize(
    "imports",
    [
        "import manual_backprop as mb\nfile_version = mb.forward_backward",
        "import manual_backprop\nfile_version = manual_backprop.forward_backward",
        "from manual_backprop import forward_backward as file_version",
    ],
)
def test_a_cell_s_import_of_its_file_binds_what_it_binds_in_jupyter(
    assignment: Assignment, imports: str
) -> None:
    # A red team's honest notebook lost manual_backprop's points: the import that bound the
    # module (or an alias) was dropped from the built file, and every call hit a NameError.
    cell = code(
        f"# part: manual_backprop\n{imports}\n"
        "def forward_backward(x, y, w1, w2):\n"
        "    return ['cell', file_version(x, y, w1, w2)]\n"
    )
    merged = extract(assignment, cell, files={"manual_backprop.py": OWN_FILE.encode()})
    namespace = run_built(merged, "manual_backprop.py")
    assert namespace["forward_backward"](1, 2, 3, 4) == ["cell", "file"]
    assert namespace["train_manual"](1, 2, 3, 4) == "file"
    assert len(merged.notes) == 1, merged.notes  # what was graded; nothing said missing


def test_a_definition_above_the_import_is_replaced_by_it(assignment: Assignment) -> None:
    cell = code(
        "# part: manual_backprop\ndef forward_backward(x, y, w1, w2):\n    return 'draft'\n"
        "from manual_backprop import forward_backward\nLEARNING_RATE = 1e-6\n"
    )
    merged = extract(assignment, cell, files={"manual_backprop.py": OWN_FILE.encode()})
    assert run_built(merged, "manual_backprop.py")["forward_backward"](1, 2, 3, 4) == "file"
    assert "'draft'" not in built(merged, "manual_backprop.py")
    assert "what the cell defines (LEARNING_RATE) replaces" in merged.notes[0]


@pytest.mark.parametrize(
    "line", ["import manual_backprop", "from manual_backprop import *"], ids=["module", "star"]
)
def test_any_import_of_the_own_module_runs_the_file_first(
    assignment: Assignment, line: str
) -> None:
    cell = code(f"# part: manual_backprop\n{line}\nLEARNING_RATE = 1e-6\n")
    merged = extract(assignment, cell, files={"manual_backprop.py": OWN_FILE.encode()})
    namespace = run_built(merged, "manual_backprop.py")
    assert namespace["forward_backward"](1, 2, 3, 4) == "file"
    assert namespace["LEARNING_RATE"] == 1e-6
    assert "graded manual_backprop.py followed by the definitions" in merged.notes[0]


@pytest.mark.parametrize(
    ("own_file", "docstring"),
    [
        (OWN_FILE, "Manual backprop, as submitted."),
        ("def forward_backward(x, y, w1, w2):\n    return 'file'\n", None),
    ],
    ids=["docstring-and-future", "neither"],
)
def test_the_cells_future_imports_go_below_the_files_docstring(
    assignment: Assignment, own_file: str, docstring: str | None
) -> None:
    cell = code(
        "# part: manual_backprop\nfrom __future__ import annotations\n"
        "from manual_backprop import forward_backward\n"
        "def train_manual(x: Later) -> Later:\n    return x\n"
    )
    merged = extract(assignment, cell, files={"manual_backprop.py": own_file.encode()})
    namespace = run_built(merged, "manual_backprop.py")  # `Later` is never evaluated
    assert namespace["train_manual"](5) == 5
    assert namespace["forward_backward"](1, 2, 3, 4) == "file"
    assert namespace.get("__doc__") == docstring  # still the module's docstring


def test_feedback_points_at_the_file_or_the_cell_the_line_came_from(
    assignment: Assignment,
) -> None:
    own_file = (
        '"""Doc."""\nfrom __future__ import annotations\n\n'
        "def forward_backward():\n    raise ValueError('file')\n"
    )
    cell = code(
        "# part: manual_backprop\nfrom __future__ import annotations\n"
        "from manual_backprop import forward_backward\n\n"
        "def train_manual():\n    raise ValueError('cell')\n"
    )
    merged = extract(assignment, cell, files={"manual_backprop.py": own_file.encode()})
    text = built(merged, "manual_backprop.py")
    origin = read_origin(text)
    assert origin is not None
    sources = {"manual_backprop.py": own_file.split("\n"), "cell 1": cell.source.split("\n")}
    mapped = 0
    for number, line in enumerate(text.split("\n"), start=1):
        found = origin.locate(number)
        if found is not None:
            label, source_line = found
            assert line == sources[" ".join(label.split()[:2])][source_line - 1]
            mapped += 1
    # The file, the cell's import of it (kept: it binds names), and train_manual's two lines.
    assert mapped == len(own_file.split("\n")) + 3
    namespace = run_built(merged, "manual_backprop.py")
    frames = []
    for function in ("forward_backward", "train_manual"):
        with pytest.raises(ValueError) as error:
            namespace[function]()
        raised = traceback.extract_tb(error.value.__traceback__)[-1].lineno
        frame = f'File "/tmp/job/submission/manual_backprop.py", line {raised}, in {function}'
        frames.append(point_at_cells(frame, {"manual_backprop.py": origin}))
    assert frames == [
        'File "/tmp/job/submission/manual_backprop.py", line 5, in forward_backward',
        'File "notebook cell 1 (`# part: manual_backprop`)", line 6, in train_manual',
    ]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("bad (line 12 of manual_backprop.py).", "bad (line 9 of manual_backprop.py)."),
        (
            "manual_backprop.py has a syntax error on line 5: x",
            "manual_backprop.py has a syntax error on line 2: x",
        ),
        ("Found: line 13: .backward; line 19: x", "Found: line 10: .backward; line 19: x"),
        (
            "manual_backprop.py failed to import: NameError (line 17 of manual_backprop.py).",
            "The part's code (manual_backprop.py and the notebook's definitions) failed to run: "
            "NameError (line 4 of notebook cell 4 (`# part: manual_backprop`)).",
        ),
    ],
    ids=["runtime", "syntax", "static-rule", "import-failure"],
)
def test_point_at_cells_keeps_lines_of_the_own_file_in_the_file(
    message: str, expected: str
) -> None:
    origin = NotebookOrigin(
        runs=((4, 10, 0, 1), (16, 2, 4, 3)),
        labels={0: "manual_backprop.py", 4: "cell 4 (`# part: manual_backprop`)"},
    )
    maps = {"manual_backprop.py": origin}
    assert point_at_cells(message + " (manual_backprop.py)", maps, "manual_backprop.py") == (
        expected + " (manual_backprop.py)"
    )


def test_an_unreadable_own_file_is_the_parts_problem(assignment: Assignment) -> None:
    cell = code("# part: manual_backprop\nfrom manual_backprop import forward_backward\nA = 1\n")
    merged = extract(assignment, cell, files={"manual_backprop.py": b"x = '\xff'\n"})
    origin = read_origin(built(merged, "manual_backprop.py"))
    problem = "manual_backprop.py is not valid UTF-8 at byte 5; save it as UTF-8 in your editor."
    assert origin is not None and origin.problem == problem
    assert merged.notes == [f"manual_backprop: {problem}"]


def test_the_digest_follows_the_file_the_cell_imports(
    assignment: Assignment, tmp_path: Path
) -> None:
    cell = code("# part: manual_backprop\nfrom manual_backprop import forward_backward\nA = 1\n")
    digests = []
    for index, own_file in enumerate([OWN_FILE, OWN_FILE + "# edited\n"]):
        folder = tmp_path / f"upload{index}"
        folder.mkdir()
        (folder / "manual_backprop.py").write_text(own_file, encoding="utf-8")
        (folder / "walkthrough.ipynb").write_bytes(notebook_bytes(cell))
        prepared = prepare_submission(folder, assignment, tmp_path / f"prepared{index}")
        assert prepared.sources["manual_backprop"] == "notebook"
        assert prepared.problems == {}
        assert own_file in prepared.files["manual_backprop.py"].read_text(encoding="utf-8")
        digests.append(prepared.sha256)
    assert digests[0] != digests[1]


def test_demo_statements_in_the_part_cell_are_not_run_and_said_so(
    assignment: Assignment,
) -> None:
    part = code(
        "# part: autograd_loop\nimport torch\nSCALE = torch.tensor(2.0)\n"
        "def train_autograd():\n    return [SCALE]\n\ntrain_autograd()\nfor i in range(3):\n"
        "    print(i)\n"
    )
    merged = extract(assignment, code(SETUP), part)
    text = built(merged, "autograd_loop.py")
    assert "train_autograd()\n" not in text and "print(i)" not in text
    assert run_built(merged, "autograd_loop.py")["train_autograd"]() == [2.0]
    assert (
        "line 7 of notebook cell 2 (`# part: autograd_loop`), `train_autograd()` (and 1 more), "
        "was not run" in " ".join(merged.notes)
    )


# -- what a part's code gets from the cells above (the cases) --------------------


def test_a_helper_defined_in_another_part_cell_is_carried(assignment: Assignment) -> None:
    manual = code(
        "# part: manual_backprop\nimport torch\ndef relu(t):\n    return t.clamp(min=0)\n"
        "def forward_backward(x, y, w1, w2):\n    return relu(x)\n"
    )
    autograd = code("# part: autograd_loop\ndef train_autograd(x):\n    return relu(x)\n")
    merged = extract(assignment, code(SETUP), manual, autograd)
    namespace = run_built(merged, "autograd_loop.py")
    import torch

    assert namespace["train_autograd"](torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    # Only what is needed: forward_backward stays in its own part's file.
    assert "forward_backward" not in built(merged, "autograd_loop.py")


def test_an_import_in_one_marked_cell_is_there_for_another(assignment: Assignment) -> None:
    autograd = code(
        "# part: autograd_loop\nimport torch.nn.functional as F\ndef train_autograd():\n"
        "    return []\n"
    )
    loader = code(
        "# part: dataloader_training\ndef evaluate(model, loader):\n"
        "    return float(F.relu(torch.tensor(-1.0)))\n"
    )
    merged = extract(assignment, code(SETUP), autograd, loader)
    assert run_built(merged, "dataloader_training.py")["evaluate"](None, None) == 0.0
    assert "train_autograd" not in built(merged, "dataloader_training.py")


def test_helpers_and_constants_from_ordinary_cells_are_carried_in_order(
    assignment: Assignment,
) -> None:
    helpers = code(
        "import torch\nSCALE = 2.0\nSCALE = SCALE * 3\nCONFIG = {}\nCONFIG['lr'] = 0.5\n"
        "OFFSET = torch.tensor(1.0)  # a call, carried because the part needs it\n"
        "UNUSED = torch.ones(10**9)  # a call the part does not need: never run\n"
        "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"
        "def scaled(t):\n    return t * SCALE + OFFSET\n"
        "losses = train_autograd(torch.ones(1))  # a training run: a demo\n"
    )
    autograd = code(
        "# part: autograd_loop\ndef train_autograd(t):\n"
        "    return [float(scaled(t)), CONFIG['lr'], np is not None]\n"
    )
    merged = extract(assignment, helpers, autograd)
    text = built(merged, "autograd_loop.py")
    assert "UNUSED" not in text and "losses =" not in text
    assert run_built(merged, "autograd_loop.py")["train_autograd"](1.0) == [7.0, 0.5, True]
    assert merged.notes == [
        "autograd_loop: graded the code in the notebook cell marked part:autograd_loop; "
        "there is no autograd_loop.py."
    ]


def test_a_name_only_a_demo_statement_creates_is_reported_with_its_cell(
    assignment: Assignment,
) -> None:
    demo = code("for scale in (1.0, 2.0):\n    LOSS_SCALE = scale\nprint(LOSS_SCALE)\n")
    autograd = code("# part: autograd_loop\ndef train_autograd():\n    return [LOSS_SCALE]\n")
    merged = extract(assignment, code(SETUP), demo, autograd)
    explanation = (
        "`LOSS_SCALE` is created only by line 1 of notebook cell 2 (`for scale in (1.0, "
        "2.0):`), in a statement the grader does not run"
    )
    assert any(explanation in note for note in merged.notes)
    origin = read_origin(built(merged, "autograd_loop.py"))
    assert origin is not None
    message = explain_missing_names(
        "Your code raised NameError: name 'LOSS_SCALE' is not defined", origin
    )
    assert explanation in message
    assert explain_missing_names("name 'other' is not defined", origin) == (
        "name 'other' is not defined"
    )


def test_cells_below_the_part_and_future_imports(assignment: Assignment) -> None:
    first = code("from __future__ import annotations\nimport math\n")
    autograd = code(
        "# part: autograd_loop\nfrom __future__ import annotations\n"
        "def train_autograd() -> list[Later]:\n    return [math.pi]\n"
    )
    later = code("Later = float\n")
    merged = extract(assignment, first, autograd, later)
    text = built(merged, "autograd_loop.py")
    body = text.split("\n", 2)[2]
    assert body.count("from __future__ import annotations") == 1
    assert text.index("from __future__") < text.index("import math")
    assert "Later = float" not in text
    compile(text, "autograd_loop.py", "exec")


def test_syntax_errors_are_placed_in_the_cell(assignment: Assignment) -> None:
    merged = extract(assignment, code(SETUP), code("# part: autograd_loop\n\ndef f(:\n"))
    assert (
        "autograd_loop: notebook cell 2 (`# part: autograd_loop`): it has a syntax error on "
        "line 3" in " ".join(merged.notes)
    )
    text = built(merged, "autograd_loop.py")
    with pytest.raises(SyntaxError) as error:
        compile(text, "autograd_loop.py", "exec")
    origin = read_origin(text)
    assert origin is not None and error.value.lineno is not None
    assert origin.locate(error.value.lineno) == ("cell 2 (`# part: autograd_loop`)", 3)


def test_a_cell_above_with_a_syntax_error_is_skipped_and_named(assignment: Assignment) -> None:
    broken = code("def helper(:\n    pass\n")
    autograd = code("# part: autograd_loop\ndef train_autograd():\n    return helper()\n")
    notes = " ".join(extract(assignment, broken, autograd).notes)
    assert "Notebook cell 1 (`def helper(:`) was skipped by the grader: it has a syntax" in notes


def test_cells_of_one_part_are_joined_in_order_and_unknown_parts_ignored(
    assignment: Assignment,
) -> None:
    first = code("A = 1", "part:autograd_loop")
    second = code("B = A + 1", "part:autograd_loop")
    stray = code("# part: homework_two\nx = 1")
    prose = nbformat.v4.new_markdown_cell("# part: manual_backprop")
    merged = extract(assignment, first, prose, stray, second)
    text = merged.sources["autograd_loop.py"].decode()
    assert text.index("A = 1") < text.index("B = A + 1")
    assert set(merged.origin) == {"autograd_loop"}
    assert any(
        "unknown parts were treated as ordinary cells: 3 ('homework_two')" in note
        for note in merged.notes
    )


# -- feedback that points at cells -------------------------------------------------------


def test_source_map_locates_every_carried_line(assignment: Assignment) -> None:
    helpers = code("import torch\n\n\n@torch.no_grad()\ndef helper(t):\n    return t\nprint(1)\n")
    autograd = code(
        "# part: autograd_loop\nX = 1; print(2); Y = 2\ndef train_autograd():\n"
        "    return helper(X + Y)\n"
    )
    merged = extract(assignment, helpers, autograd)
    text = built(merged, "autograd_loop.py")
    origin = read_origin(text)
    assert origin is not None
    lines = text.split("\n")
    cells = {1: helpers.source.split("\n"), 2: autograd.source.split("\n")}
    mapped = 0
    for number, line in enumerate(lines, start=1):
        found = origin.locate(number)
        if found is None:
            assert number <= 3 or line.startswith("# notebook cell") or not line
            continue
        label, cell_line = found
        cell = int(label.split()[1])
        # A statement sharing its line with a dropped one is a piece of that line.
        assert line in cells[cell][cell_line - 1]
        mapped += 1
    assert mapped == 8  # import, decorator, def (2 lines), X, Y, def train (2 lines)
    assert "print(2)" not in text


def origin_for(*runs: tuple[int, int, int, int]) -> NotebookOrigin:
    labels = {run[2]: f"cell {run[2]} (`first line {run[2]}`)" for run in runs}
    return NotebookOrigin(runs=tuple(runs), labels=labels)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Your code raised ValueError: bad (line 12 of autograd_loop.py).",
            "Your code raised ValueError: bad (line 4 of notebook cell 7 (`first line 7`)).",
        ),
        (
            "autograd_loop.py has a syntax error on line 20: '[' was never closed.",
            "notebook cell 9 (`first line 9`) has a syntax error on line 3: '[' was never closed.",
        ),
        (
            'File "/tmp/job/submission/autograd_loop.py", line 10, in train\n',
            'File "notebook cell 7 (`first line 7`)", line 2, in train\n',
        ),
        (
            "autograd_loop.py must not use autograd. Found: line 9: .backward; line 19: x",
            "autograd_loop.py must not use autograd. Found: line 1 of notebook cell 7 "
            "(`first line 7`): .backward; line 2 of notebook cell 9 (`first line 9`): x",
        ),
        (
            "line 2 of autograd_loop.py: the grader's header",
            "line 2 of autograd_loop.py: the grader's header",
        ),
        ("line 12 of manual_backprop.py", "line 12 of manual_backprop.py"),
        ("Found: line 9: x (no file named)", "Found: line 9: x (no file named)"),
        (
            "autograd_loop.py failed to import: NameError: name 'lr' is not defined (line 12 of "
            "autograd_loop.py).",
            "The part's code from the notebook failed to run: NameError: name 'lr' is not "
            "defined (line 4 of notebook cell 7 (`first line 7`)).",
        ),
    ],
    ids=[
        "runtime",
        "syntax",
        "traceback",
        "static-rule",
        "header-line",
        "other-file",
        "unnamed",
        "import-failure",
    ],
)
def test_point_at_cells(message: str, expected: str) -> None:
    origin = origin_for((9, 5, 7, 1), (18, 3, 9, 1))
    assert point_at_cells(message, {"autograd_loop.py": origin}, "autograd_loop.py") == expected


def test_the_origin_header_is_read_only_from_the_header() -> None:
    assert read_origin("import os\n# grader-notebook-origin: {}\n") is None
    assert read_origin("# x\n# grader-notebook-origin: {not json\n") is None
    assert read_origin('# x\n# grader-notebook-origin: {"runs": [["a"]]}\n') is None


# -- hostile and malformed notebooks -----------------------------------------------------


def raw_notebook(cells: list[Any]) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()


def test_wrong_types_anywhere_cost_only_their_cell(assignment: Assignment) -> None:
    reference = (SOLUTIONS_DIR / "autograd_loop.py").read_text(encoding="utf-8")
    cells: list[Any] = [
        {
            "cell_type": "code",
            "metadata": {"tags": 5},
            "source": ["import torch\n", "S = 1\n"],
            "outputs": 7,
            "execution_count": "x",
        },
        {"cell_type": "code", "metadata": [], "source": "# part: autograd_loop\n" + reference},
        {"cell_type": "markdown", "metadata": {"tags": [1, None]}, "source": 12},
        {"cell_type": 3, "source": "# part: manual_backprop\n"},
        "not a cell",
        {"cell_type": "code", "metadata": {"tags": ["part:custom_sigmoid"]}, "source": 5},
        {"cell_type": "code", "source": [1, 2], "metadata": {"tags": "part:two_layer_net"}},
    ]
    merged = merge_notebook_parts(raw_notebook(cells), assignment, {})
    assert merged.origin == {"autograd_loop": "notebook", "custom_sigmoid": "notebook"}
    assert "def train_autograd" in built(merged, "autograd_loop.py")
    origin = read_origin(built(merged, "custom_sigmoid.py"))
    assert origin is not None
    assert origin.problem == (
        "The notebook cell 6 marked part:custom_sigmoid cannot be graded: its source is not "
        "text; re-type it in Jupyter."
    )
    notes = "\n".join(merged.notes)
    assert "Notebook cells 1, 3, 7: metadata.tags is not a list of strings" in notes
    assert "Notebook cell 2: metadata is not a JSON object" in notes
    assert "Notebook cell 4: no valid cell_type" in notes
    assert "Notebook cell 5: not a cell" in notes
    assert "Notebook cells 3, 6, 7: source is not text" in notes


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"cells": [', "is not valid JSON (line 1, column 12"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
        (b"[]", "has no list of cells"),
        (b'{"nbformat": 3, "worksheets": []}', "old format version 3"),
        (b"[" * 100_000 + b"]" * 100_000, "could not be read"),
        (raw_notebook([{}] * (MAX_CELLS + 1)), f"more than the {MAX_CELLS:,}"),
        (
            raw_notebook(
                [{"cell_type": "code", "source": "a = 1\n" * MAX_CELL_STATEMENTS}]
                * (MAX_STATEMENTS // MAX_CELL_STATEMENTS + 1)
                + [{"cell_type": "code", "source": "# part: autograd_loop\n"}]
            ),
            f"over {MAX_STATEMENTS:,} top-level statements",
        ),
    ],
    ids=[
        "truncated",
        "not-utf8",
        "not-an-object",
        "version-3",
        "deep",
        "too-many-cells",
        "too-many-statements",
    ],
)
def test_unreadable_notebooks_are_a_submission_error(
    assignment: Assignment, data: bytes, message: str
) -> None:
    with pytest.raises(SubmissionError, match=r"(?s).*" + message.replace("(", r"\(")):
        merge_notebook_parts(data, assignment, {})


def test_a_30000_import_cell_costs_only_its_part(assignment: Assignment) -> None:
    imports = "import math\n" * 30_000
    cells = [
        code(imports),
        code("# part: manual_backprop\n" + imports + "def forward_backward():\n    pass\n"),
        code("# part: autograd_loop\ndef train_autograd():\n    return [math.pi]\n"),
    ]
    merged = extract(assignment, *cells)
    origin = read_origin(built(merged, "manual_backprop.py"))
    assert origin is not None
    assert origin.problem == (
        "The notebook cell 2 (`# part: manual_backprop`) marked part:manual_backprop cannot be "
        f"graded: it holds {len(cells[1].source):,} characters, over the {MAX_CELL_CHARS:,} "
        "the grader reads in one cell; keep data in files and split long code over several cells."
    )
    assert "Notebook cell 1 (`import math`) was skipped by the grader: it holds 360,000" in (
        " ".join(merged.notes)
    )


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("a = 1\n" * (MAX_CELL_STATEMENTS + 1), "top-level statements, over the"),
        ('x = f"' + "{a}" * (MAX_CELL_BRACES + 1) + '"\n', "long f-strings are slow to parse"),
        ("x = " + "(" * 300 + ")" * 300 + "\n", "syntax error"),
        ("x = " + "-" * 50_000 + "1\n", "too deeply nested"),
    ],
    ids=["statements", "f-string-fields", "parentheses", "nesting"],
)
def test_cells_beyond_the_parser_bounds_are_refused_with_the_reason(
    assignment: Assignment, source: str, problem: str
) -> None:
    merged = extract(assignment, code("# part: autograd_loop\n" + source))
    origin = read_origin(built(merged, "autograd_loop.py"))
    if problem == "syntax error":
        assert any("it has a syntax error" in note for note in merged.notes)
    else:
        assert origin is not None and problem in origin.problem


def test_lone_surrogates_and_hostile_first_lines_stay_safe(assignment: Assignment) -> None:
    cells = [
        {
            "cell_type": "code",
            "metadata": {"tags": ["part:autograd_loop"]},
            "source": "# \x1b[2J`\ud800 my code\n"
            "S = '\ud800'\ndef train_autograd():\n    return [S]\n",
        }
    ]
    merged = merge_notebook_parts(raw_notebook(cells), assignment, {})
    text = built(merged, "autograd_loop.py")
    assert "\ufffd" in text and "\x1b" not in text.split("\n")[1]
    origin = read_origin(text)
    assert (
        origin is not None
        and "\x1b" not in origin.labels[1]
        and "`" not in origin.labels[1][len("cell 1 (`") : -len("`)")]
    )


@pytest.mark.parametrize("declared", ["latin-1", "utf-16", "default"])
def test_no_cell_text_decides_how_a_built_file_is_decoded(
    assignment: Assignment, tmp_path: Path, declared: str
) -> None:
    # The header quotes each contributing cell's first line on line 2, where Python reads an
    # encoding declaration when line 1 has none.
    first_line = f"# Setup (file encoding: {declared})"
    cells = [
        code(f"{first_line}\nimport torch\nGREETING = 'héllo'\n"),
        code("# part: manual_backprop\ndef forward_backward():\n    return GREETING, torch\n"),
    ]
    notebook = tmp_path / "walkthrough.ipynb"
    notebook.write_bytes(notebook_bytes(*cells))
    prepared = prepare_submission(notebook, assignment, tmp_path / "prepared")
    assert prepared.sources["manual_backprop"] == "notebook"
    assert "manual_backprop" not in prepared.problems
    text = prepared.files["manual_backprop.py"].read_text(encoding="utf-8")
    assert "GREETING = 'héllo'" in text
    origin = read_origin(text)
    # The clean copy keeps the student's line as written in the label.
    assert origin is not None and origin.labels[1] == f"cell 1 (`{first_line}`)"


def test_grade_reads_the_headers_of_notebook_parts_only(
    assignment: Assignment, tmp_path: Path
) -> None:
    from grader.grading.grade import _with_notebook_problems, notebook_origins

    folder = tmp_path / "upload"
    folder.mkdir()
    forged = (
        '# x\n# grader-notebook-origin: {"runs": [], "labels": {}, "missing": {}, "problem": "x"}\n'
    )
    (folder / "manual_backprop.py").write_text(forged, encoding="utf-8")
    cells = [
        code("# part: autograd_loop\n" + "a = 1\n" * (MAX_CELL_STATEMENTS + 1)),
        code("# part: custom_sigmoid\ndef sigmoid(x):\n    return x\n"),
    ]
    (folder / "walkthrough.ipynb").write_bytes(notebook_bytes(*cells))
    prepared = prepare_submission(folder, assignment, tmp_path / "prepared")
    origins = notebook_origins(assignment, prepared)
    # A .py file that imitates the header is the student's, never read as the grader's.
    assert set(origins) == {"autograd_loop.py", "custom_sigmoid.py"}
    problems = _with_notebook_problems(assignment, prepared, origins).problems
    assert set(problems) == {"autograd_loop"}
    assert "top-level statements, over the 2,000" in problems["autograd_loop"]


def test_damaged_notebook_is_a_submission_error(assignment: Assignment) -> None:
    with pytest.raises(SubmissionError, match="not valid JSON"):
        merge_notebook_parts(b'{"cells": [', assignment, {})


# -- whole submissions -------------------------------------------------------------------


def reference_notebook(out: Path) -> Path:
    """The walkthrough with each part's import replaced by the reference code (and magics)."""
    codes = {
        Path(name).stem: "%timeit -n1 1 + 1\n!pip install --quiet nothing\n"
        + (SOLUTIONS_DIR / name).read_text(encoding="utf-8")
        for name in PART_FILES
    }
    return notebook_with_part_code(ASSIGNMENT_DIR / "walkthrough.ipynb", codes, out)


def test_zip_holding_the_notebook_prepares_like_the_notebook(
    assignment: Assignment, tmp_path: Path
) -> None:
    notebook = reference_notebook(tmp_path / "walkthrough.ipynb")
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(notebook, "my-work/walkthrough.ipynb")
    from_zip = prepare_submission(archive, assignment, tmp_path / "a")
    alone = prepare_submission(notebook, assignment, tmp_path / "b")
    assert from_zip.sources == alone.sources == {part.id: "notebook" for part in assignment.parts}
    assert from_zip.problems == alone.problems == {}
    assert from_zip.sha256 == alone.sha256
    for name, path in alone.files.items():
        assert from_zip.files[name].read_bytes() == path.read_bytes()


def test_a_lone_renamed_notebook_is_graded_and_several_are_not(
    assignment: Assignment, tmp_path: Path
) -> None:
    notebook = reference_notebook(tmp_path / "walkthrough.ipynb").read_bytes()
    folder = tmp_path / "folder"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "lab 1 (final).ipynb").write_bytes(notebook)
    (folder / ".ipynb_checkpoints" / "lab 1 (final)-checkpoint.ipynb").write_bytes(notebook)
    lone = prepare_submission(folder, assignment, tmp_path / "lone")
    assert lone.sources == {part.id: "notebook" for part in assignment.parts}
    assert any("Graded lab 1 (final).ipynb as the assignment's notebook" in n for n in lone.notes)
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("work/draft.ipynb", notebook)
        handle.writestr("work/final.ipynb", notebook)
    several = prepare_submission(archive, assignment, tmp_path / "several")
    assert set(several.sources.values()) == {"missing"}
    assert any("draft.ipynb, final.ipynb but no walkthrough.ipynb" in n for n in several.notes)


@pytest.mark.slow
def test_notebook_only_submission_grades_like_the_py_files(
    reference_copy: Path, tmp_path: Path
) -> None:
    notebook = reference_notebook(tmp_path / "walkthrough.ipynb")
    (tmp_path / "notebook").mkdir()
    (tmp_path / "files").mkdir()
    process, report, _ = grade_to_report(notebook, tmp_path / "notebook")
    assert process.returncode == 0, process.stderr
    _, expected, _ = grade_to_report(reference_copy, tmp_path / "files")
    assert part_scores(report) == part_scores(expected)
    assert report["score"] == expected["score"] == expected["max_score"]
    outcomes = {(t["name"], t["outcome"], t["score"]) for t in report["tests"]}
    assert outcomes == {(t["name"], t["outcome"], t["score"]) for t in expected["tests"]}
    assert {part["source"] for part in report["parts"].values()} == {"notebook"}
    assert "notebook cell marked part:manual_backprop" in " ".join(process.stdout.split())


# -- the corpus: each case runs in Jupyter, then is graded end to end ---------------------


def execute_notebook(folder: Path) -> None:
    """Run the folder's walkthrough.ipynb top to bottom in a Jupyter kernel, in `folder`."""
    from nbclient import NotebookClient

    notebook = nbformat.read(folder / "walkthrough.ipynb", as_version=4)
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(folder)}}
    )
    client.execute()


def part_feedback(report: dict[str, Any], part: str) -> str:
    messages = [test["message"] for test in report["tests"] if test["part"] == part]
    return "\n".join([report["parts"][part].get("problem", ""), *messages])


def assert_graded_as_expected(
    report: dict[str, Any], expected: dict[str, Any], process_output: str
) -> None:
    assert report["grader_error"] is None, report["grader_error"]
    assert part_scores(report) == pytest.approx({**POINTS, **expected.get("scores", {})})
    for part, needles in expected.get("messages", {}).items():
        feedback = part_feedback(report, part)
        for needle in needles:
            assert needle in feedback, f"{part}: {needle!r} not in\n{feedback}"
    notes = "\n".join(report["submission"]["notes"])
    for part, needles in expected.get("notes", {}).items():
        for needle in needles:
            assert f"{part}: " in notes and needle in notes, f"{needle!r} not in\n{notes}"
    assert "Traceback" not in process_output


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", sorted(path for path in CORPUS.iterdir() if path.is_dir()), ids=lambda path: path.name
)
def test_notebook_corpus(case: Path, tmp_path: Path) -> None:
    expected = tomllib.loads((case / "expected.toml").read_text(encoding="utf-8"))
    # The reference .py files next to the notebook: its default import cells use them, and
    # a part taken from the notebook must ignore its .py file.
    submission = copy_part_files(SOLUTIONS_DIR, tmp_path / "submission")
    shutil.copy(case / "walkthrough.ipynb", submission)
    if expected["runs_in_jupyter"]:
        jupyter = shutil.copytree(submission, tmp_path / "jupyter")
        execute_notebook(jupyter)
    process, report, _ = grade_to_report(submission, tmp_path)
    assert process.returncode == 0, process.stderr
    assert_graded_as_expected(report, expected, process.stdout)


@pytest.mark.slow
def test_a_hostile_notebook_costs_only_the_parts_that_come_from_it(tmp_path: Path) -> None:
    """Wrong types everywhere, a 30,000-import cell, a part cell whose source is a number."""
    walkthrough = json.loads((ASSIGNMENT_DIR / "walkthrough.ipynb").read_text(encoding="utf-8"))
    for cell in walkthrough["cells"]:
        cell["metadata"] = {"tags": 5}
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = {"not": "a list"}, "seven"
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if source.startswith("# part: manual_backprop"):
            reference = (SOLUTIONS_DIR / "manual_backprop.py").read_text(encoding="utf-8")
            cell["source"] = "# part: manual_backprop\n" + "import math\n" * 30_000 + reference
        elif source.startswith("# part: autograd_loop"):
            cell["metadata"] = {"tags": ["part:autograd_loop"]}
            cell["source"] = 42
        elif source.startswith("# part: two_layer_net"):
            reference = (SOLUTIONS_DIR / "two_layer_net.py").read_text(encoding="utf-8")
            cell["source"] = ("# part: two_layer_net\n" + reference).splitlines(keepends=True)
    walkthrough["cells"].insert(1, {"cell_type": None, "source": ["x"]})
    submission = copy_part_files(SOLUTIONS_DIR, tmp_path / "submission")
    (submission / "walkthrough.ipynb").write_text(json.dumps(walkthrough), encoding="utf-8")
    process, report, _ = grade_to_report(submission, tmp_path)
    assert process.returncode == 0, process.stderr
    expected = {
        "scores": {"manual_backprop": 0, "autograd_loop": 0},
        "messages": {
            "manual_backprop": ["marked part:manual_backprop cannot be graded: it holds 3"],
            "autograd_loop": ["marked part:autograd_loop cannot be graded: its source is not text"],
        },
    }
    assert_graded_as_expected(report, expected, process.stdout)
    assert report["parts"]["two_layer_net"]["source"] == "notebook"
    notes = " ".join(report["submission"]["notes"])
    assert "metadata.tags is not a list of strings" in notes
    assert "no valid cell_type" in notes
