"""Notebook submissions: which cells count, how their code is extracted, and that grading a
notebook gives exactly what grading the equivalent .py files gives."""

from __future__ import annotations

import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import (
    ASSIGNMENT_DIR,
    PART_FILES,
    SOLUTIONS_DIR,
    grade_to_report,
    notebook_with_part_code,
    part_scores,
)

from grader.assignment import Assignment, load_assignment
from grader.errors import SubmissionError
from grader.notebook import NotebookParts, cell_part, merge_notebook_parts, strip_magics
from grader.submission import prepare_submission

SETUP = "%matplotlib inline\nimport math\nimport matplotlib.pyplot as plt\nimport torch\nN = 64\n"


@pytest.fixture(scope="module")
def assignment() -> Assignment:
    return load_assignment("pytorch_basics")


def notebook_bytes(*cells: nbformat.NotebookNode) -> bytes:
    notebook = nbformat.v4.new_notebook(cells=list(cells))
    return nbformat.writes(notebook).encode("utf-8")  # type: ignore[no-untyped-call]


def code(source: str, *tags: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})


def extract(
    assignment: Assignment, *cells: nbformat.NotebookNode, files: dict[str, bytes] | None = None
) -> NotebookParts:
    return merge_notebook_parts(notebook_bytes(*cells), assignment, files or {})


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
    assert cell_part(code(source, *tags)) == expected


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
    text = merged.sources["autograd_loop.py"].decode()
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


def test_code_that_runs_on_import_and_names_from_other_cells_are_noted(
    assignment: Assignment,
) -> None:
    part = code(
        "# part: autograd_loop\ndef train_autograd():\n    return [N]\n\ntrain_autograd()\n"
    )
    notes = " ".join(extract(assignment, code(SETUP), part).notes)
    assert "line 5 of the cell marked part:autograd_loop runs `train_autograd()`" in notes
    assert "uses N, defined in another cell" in notes


def test_syntax_errors_are_placed_in_the_cell(assignment: Assignment) -> None:
    merged = extract(assignment, code("# part: autograd_loop\n\ndef f(:\n"))
    assert "syntax error on line 3 of the cell" in " ".join(merged.notes)


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
    assert any("unknown part 'homework_two' was ignored" in note for note in merged.notes)


def test_damaged_notebook_is_a_submission_error(assignment: Assignment) -> None:
    with pytest.raises(SubmissionError, match="could not be read"):
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
