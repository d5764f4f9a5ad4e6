"""`check` and `submit` called from cells of a running kernel (grader/notebook/kernel.py).

Each end-to-end test executes a notebook with nbclient in a starter kit, as a student runs it,
and reads the cells' outputs: what the in-notebook check shows, and the zip submit writes.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest

from grader.authoring.build import build_starter
from grader.course.manifest import load_assignment
from grader.notebook.kernel import _renumber, unsaved_parts
from grader.notebook.walkthrough import CHECK_CELL
from grader.student.check import CheckResult, PartCheck
from grader.student.run import PublicTest
from tests.support import (
    SOLUTIONS_DIR,
    copy_starter_kit,
    grade_to_report,
    notebook_with_part_code,
)

KIT_FOLDER = Path("assignments") / "pytorch_basics"
ASSIGNMENT = load_assignment("pytorch_basics")
HANGING_SIGMOID = """\
import torch


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        while True:
            pass


def sigmoid(x):
    return Sigmoid.apply(x)


def train_sigmoid_net(x, y, w1, w2, learning_rate, steps):
    while True:
        pass
"""


def part_cell(part_id: str, code: str) -> str:
    return f"# part: {part_id}\n{code}"


def reference_cell(part_id: str) -> str:
    return part_cell(part_id, (SOLUTIONS_DIR / f"{part_id}.py").read_text(encoding="utf-8"))


def new_notebook(sources: list[str]) -> Any:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def run_cells(folder: Path, sources: list[str]) -> list[str]:
    """Execute `sources` as a notebook in `folder`; each cell's text outputs, joined."""
    from nbclient import NotebookClient

    notebook = new_notebook(sources)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return [_text(cell.outputs) for cell in notebook.cells]


def _text(outputs: list[Any]) -> str:
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        elif "data" in output:
            parts.append(output.data.get("text/plain", ""))
            if "text/html" in output.data:
                parts.append("[html]")
    return "\n".join(parts)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def kit(tmp_path: Path) -> Path:
    """A starter kit whose public tests stop after 3 s, so a hanging part ends quickly."""
    kit = copy_starter_kit(tmp_path / "kit")
    manifest = kit / KIT_FOLDER / "assignment.toml"
    text = manifest.read_text(encoding="utf-8")
    text = text.replace("timeout_s = 60", "timeout_s = 3").replace(
        "part_budget_s = 90", "part_budget_s = 6"
    )
    manifest.write_text(text, encoding="utf-8")
    return kit


@pytest.mark.slow
def test_correct_code_in_every_part_cell_passes_every_public_test(kit: Path) -> None:
    cells = [
        "from grader.notebook import check",
        *(reference_cell(part.id) for part in ASSIGNMENT.parts),
        'check("two_layer_net")',
        "check()",
    ]
    outputs = run_cells(kit / KIT_FOLDER, cells)
    one, every = outputs[-2], outputs[-1]
    assert "[html]" in one and "[html]" in every  # rendered where the front end can
    assert "two_layer_net" in one and "all passed" in one
    assert "manual_backprop" not in one  # that part's tests and notes only
    for part in ASSIGNMENT.parts:
        row = next(line for line in every.splitlines() if f"│ {part.id} " in line)
        assert "notebook" in row and "all passed" in row, row
    assert "public tests passed" in flat(every)
    # The kit's files are still the stubs: the cells as they ran were checked, not the files.
    assert "raise NotImplementedError" in (kit / KIT_FOLDER / "two_layer_net.py").read_text()


@pytest.mark.slow
def test_stub_and_hanging_parts_then_submit(kit: Path, tmp_path: Path) -> None:
    folder = kit / KIT_FOLDER
    walkthrough = nbformat.read(folder / "walkthrough.ipynb", as_version=4)
    colab_cell = walkthrough.cells[0].source
    cells = [
        colab_cell,
        "from grader.notebook import check, submit",
        reference_cell("manual_backprop"),
        part_cell("autograd_loop", "from autograd_loop import train_autograd"),
        part_cell("custom_sigmoid", HANGING_SIGMOID),
        'check("manual_backprop")',
        'check("autograd_loop")',
        'check("custom_sigmoid")',
        'print("the kernel still runs cells")',
        "print(submit())",
    ]
    # Saved before the hanging cell was written: submit zips the saved one, and says so.
    saved = [*cells[:4], part_cell("custom_sigmoid", "from custom_sigmoid import sigmoid")]
    nbformat.write(new_notebook(saved), folder / "walkthrough.ipynb")
    outputs = run_cells(folder, cells)
    assert outputs[0] == ""  # the Colab cell does nothing in a plain kernel
    manual, stub, hanging, after, submitted = outputs[5:]
    assert "all passed" in manual
    assert "not implemented yet" in stub and "NOT IMPLEMENTED YET" in stub
    assert "timeout" in hanging.lower() and "Stopped after 3 s" in flat(hanging)
    assert after.strip() == "the kernel still runs cells"

    zip_path = folder / "pytorch_basics_submission.zip"
    assert f"Your submission: {zip_path}" in submitted
    assert "warning: the cell of custom_sigmoid you ran last ([5]) is not in the saved" in flat(
        submitted
    )
    assert "manual_backprop you ran" not in submitted
    assert "\x1b[" not in submitted  # plain text, no terminal colours
    with zipfile.ZipFile(zip_path) as archive:
        assert "walkthrough.ipynb" in archive.namelist()
    process, report, _ = grade_to_report(zip_path, tmp_path)
    assert process.returncode == 0, process.stderr[-2000:]
    assert report["parts"]["manual_backprop"]["score"] == 20
    assert report["parts"]["autograd_loop"]["score"] == 0


def test_a_part_cell_run_but_not_saved_is_named(tmp_path: Path) -> None:
    saved = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(part_cell("manual_backprop", "x = 1"))]
    )
    nbformat.write(saved, tmp_path / "walkthrough.ipynb")
    ran = [(3, part_cell("manual_backprop", "x = 1")), (7, part_cell("autograd_loop", "y = 2"))]
    assert unsaved_parts(tmp_path, ASSIGNMENT, ran) == [
        "warning: the cell of autograd_loop you ran last ([7]) is not in the saved "
        "walkthrough.ipynb: save the notebook (File > Save, or Ctrl+S / Cmd+S), then run "
        "submit() again."
    ]
    assert unsaved_parts(tmp_path, ASSIGNMENT, ran[:1]) == []


def test_feedback_names_cells_by_their_execution_count() -> None:
    test = PublicTest(
        nodeid="t",
        part="autograd_loop",
        name="t",
        points=1,
        outcome="error",
        message="Your code raised ValueError (line 3 of notebook cell 2 (`# part: x`)).",
    )
    part = PartCheck("autograd_loop", "autograd_loop.py", "notebook", 0, 1, 0, 1, 15)
    result = CheckResult("pytorch_basics", Path("."), (part,), (test,), notes=("cell 1 (`a`)",))
    renamed = _renumber(result, {1: 4, 2: 9})
    assert (
        renamed.tests[0].message
        == "Your code raised ValueError (line 3 of cell [9] (`# part: x`))."
    )
    assert renamed.notes == ("cell [4] (`a`)",)


@pytest.mark.slow
def test_the_kit_s_walkthrough_checks_and_submits_in_a_plain_kernel(tmp_path: Path) -> None:
    """The rendered walkthrough of a built kit, run top to bottom with the kit's own grader.

    Part `mse` holds correct code in its cell, `cross_entropy` keeps the stub's import.
    """
    from nbclient import NotebookClient

    built = build_starter("pytorch_losses", output=tmp_path / "kit.zip")
    with zipfile.ZipFile(built.path) as archive:
        archive.extractall(tmp_path)
    kit = tmp_path / "pytorch_losses"
    folder = kit / "assignments" / "pytorch_losses"
    reference = (SOLUTIONS_DIR.parent / "pytorch_losses" / "mse.py").read_text(encoding="utf-8")
    notebook_path = notebook_with_part_code(
        folder / "walkthrough.ipynb", {"mse": reference}, folder / "walkthrough.ipynb"
    )
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        allow_errors=True,  # the demonstration of the stub part stops at NotImplementedError
        resources={"metadata": {"path": str(folder)}},
    )
    # The kit's grader, as its virtual environment would import it, not this checkout's.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    client.execute(env={**environment, "PYTHONPATH": str(kit)})
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outputs = {cell.source: _text(cell.outputs) for cell in code}

    colab, setup = code[:2]
    assert "google.colab" in colab.source and colab.outputs == []  # harmless outside Colab
    assert setup.source.startswith("from grader.notebook import check, submit")
    assert [o for o in setup.outputs if o.output_type == "error"] == []
    mse = outputs[CHECK_CELL.format(part_id="mse")]
    assert "[html]" in mse and "all passed" in mse and "notebook" in mse
    assert "cross_entropy" not in mse
    stub = outputs[CHECK_CELL.format(part_id="cross_entropy")]
    assert "not implemented yet" in stub and "NOT IMPLEMENTED YET" in stub
    every = outputs["check()"]
    assert "all passed" in every and "not implemented yet" in every

    zip_path = folder / "pytorch_losses_submission.zip"
    assert f"Your submission: {zip_path}" in outputs["submit()"]
    assert "is not in the saved" not in outputs["submit()"]  # the notebook ran as saved
    process, report, _ = grade_to_report(zip_path, tmp_path, "-a", "pytorch_losses")
    assert process.returncode == 0, process.stderr[-2000:]
    assert report["parts"]["mse"]["score"] == 10
    assert report["parts"]["cross_entropy"]["score"] == 0
