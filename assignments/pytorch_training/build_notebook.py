"""Build walkthrough.ipynb, the notebook that walks through the assignment.

Usage: python assignments/pytorch_training/build_notebook.py [--out PATH]

This script is the notebook's source: edit it, rerun it, and commit both. The output
holds no cell outputs and has fixed cell ids, so rebuilding an unchanged script gives
a byte-identical file (tests/test_pytorch_training.py checks that).

Submission convention (the grader extracts code by it): each part has exactly one code
cell tagged `part:<part_id>` whose first line is `# part: <part_id>`. If that cell
holds only comments and `from <part file> import ...` lines, the grader uses the .py
file; otherwise the cell's code is the student's solution of that part.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.notebook.kernel import colab_setup_source

NOTEBOOK_PATH = Path(__file__).resolve().parent / "walkthrough.ipynb"

INTRO = """\
# Training a classifier: a walkthrough

The lecture's two-layer net grown into a real task: classify scikit-learn's 8x8 digits
(shipped with the assignment in `digits.pt`: 1,000 for training, 297 for validation).
Train it with `torch.optim` and a `DataLoader`, log the run for **TensorBoard**, and keep
the best checkpoint.

**How to work.** Each part has one cell marked `# part: <part_id>`. By default it
imports your functions from the part's file (for example `training.py`, next to this
notebook), so you can write your code there and use this notebook to try it out. Or
replace that cell's import with your own code: the grader then takes the code from the
cell. Either way, keep the function names and signatures of the docstrings in the `.py`
files.

Run the notebook top to bottom. It stops at the first part that is not implemented yet,
with that function's `NotImplementedError`. Below each part's cell, `check("<part_id>")`
runs that part's public tests on the code as you ran it, the same tests and feedback as
`python -m grader check`; `check()` at the end runs every part's.

**In Google Colab**, run the first cell before anything else: it installs the kit."""

SUBMIT = """\
## Check everything, then submit

`check()` runs the public tests of every part on the code as you ran it. `submit()` writes
the zip to upload to Gradescope and says where it is (in Colab it also downloads it). It
zips the notebook **as saved**: save it first (File > Save, or Ctrl+S / Cmd+S); in Colab
it takes the notebook as it is now."""

SETUP = """\
from grader.notebook import check, submit

# Reload your .py files when they change, so edits show up without restarting.
%load_ext autoreload
%autoreload 2

import tempfile
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

raw = torch.load("digits.pt", weights_only=True)
train_x, train_y = raw["train_x"].float() / 16, raw["train_y"].long()
val_x, val_y = raw["val_x"].float() / 16, raw["val_y"].long()
print("training digits:", tuple(train_x.shape), "validation digits:", tuple(val_x.shape))


def two_layer_net(hidden=48):
    \"\"\"The lecture's two-layer net for 8x8 digits, with dropout.\"\"\"
    return nn.Sequential(OrderedDict(
        linear1=nn.Linear(64, hidden), relu=nn.ReLU(), dropout=nn.Dropout(0.2),
        linear2=nn.Linear(hidden, 10),
    ))


# Logs and checkpoints of this walkthrough go to a temporary folder.
scratch = tempfile.TemporaryDirectory()
scratch_dir = Path(scratch.name)"""

PARTS: list[tuple[str, str, list[str]]] = [
    # (part id, markdown before the part cell, cells that use the part's functions)
    (
        "training",
        """\
## Part 1: training with torch.optim and a DataLoader (`training.py`)

`train_model` trains with SGD (momentum 0.9) on shuffled batches and returns each step's
loss; `predict` returns the class of each digit, in eval mode. Seeding torch fixes the
initial weights, the shuffle and dropout: the same seed gives the same losses.""",
        [
            """\
torch.manual_seed(0)
model = two_layer_net()
losses = train_model(model, train_x, train_y, epochs=6, batch_size=50, learning_rate=0.1)
print(f"{len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
accuracy = (predict(model, val_x) == val_y).float().mean().item()
print(f"validation accuracy: {accuracy:.3f}")""",
        ],
    ),
    (
        "tensorboard_logging",
        """\
## Part 2: logging for TensorBoard (`tensorboard_logging.py`)

`SummaryWriter` writes event files into a log folder; `tensorboard --logdir <folder>`
shows them as curves. Log the loss under `train/loss` at every step and the validation
accuracy under `val/accuracy` after every epoch.""",
        [
            """\
log_dir = scratch_dir / "runs" / "digits"
torch.manual_seed(0)
result = train_with_logging(two_layer_net(), train_x, train_y, val_x, val_y,
                            epochs=6, batch_size=50, learning_rate=0.1, log_dir=str(log_dir))
print("validation accuracy per epoch:", [round(a, 3) for a in result["val_accuracy"]])
print("event files:", [p.name for p in log_dir.iterdir()])
print(f"view them with: tensorboard --logdir {log_dir.parent}")""",
        ],
    ),
    (
        "checkpointing",
        """\
## Part 3: keeping the best checkpoint (`checkpointing.py`)

Validation accuracy does not always rise: keep the weights of the best epoch in a file
(a `state_dict`), then load them into a fresh model with `weights_only=True`.""",
        [
            """\
torch.manual_seed(0)
model = two_layer_net()
path = scratch_dir / "best.pt"
best = float("-inf")
for epoch in range(6):
    train_model(model, train_x, train_y, epochs=1, batch_size=50, learning_rate=0.1)
    accuracy = (predict(model, val_x) == val_y).float().mean().item()
    best = keep_best(model, accuracy, best, path)
    print(f"epoch {epoch}: accuracy {accuracy:.3f}, best {best:.3f}")

restored = load_model(path, two_layer_net())
accuracy = (predict(restored, val_x) == val_y).float().mean().item()
print(f"the restored model's validation accuracy: {accuracy:.3f}")""",
        ],
    ),
]

# What each part cell imports from the part's file: the names the later cells use.
PART_NAMES: dict[str, list[str]] = {
    "training": ["predict", "train_model"],
    "tensorboard_logging": ["train_with_logging"],
    "checkpointing": ["keep_best", "load_model"],
}


def part_import(part_id: str) -> str:
    """The import of a part's names, on one line or wrapped as `ruff format` writes it."""
    line = f"from {part_id} import {', '.join(PART_NAMES[part_id])}"
    if len(line) <= 100:
        return line
    names = "".join(f"    {name},\n" for name in PART_NAMES[part_id])
    return f"from {part_id} import (\n{names})"


def part_cell_source(part_id: str) -> str:
    """Return the default content of a part's submission cell."""
    return "\n".join(
        [
            f"# part: {part_id}",
            f"# Write your code in {part_id}.py, or replace the import below with your own code.",
            part_import(part_id),
        ]
    )


def check_cell_source(part_id: str) -> str:
    """Return the cell that runs a part's public tests on the code as it ran."""
    return "\n".join(
        [
            "# This part's public tests, on your code as you ran it (run the cell above first).",
            f'check("{part_id}")',
        ]
    )


def build_notebook() -> NotebookNode:
    """Return the walkthrough notebook, without outputs and with deterministic cell ids."""
    cells: list[NotebookNode] = []

    def add(cell: NotebookNode) -> None:
        # nbformat gives new cells random ids; fixed ones keep the file reproducible.
        cell["id"] = f"cell-{len(cells) + 1:02d}"
        cells.append(cell)

    add(nbformat.v4.new_code_cell(colab_setup_source("pytorch_training")))
    add(nbformat.v4.new_markdown_cell(INTRO))
    add(nbformat.v4.new_code_cell(SETUP))
    for part_id, introduction, usage_cells in PARTS:
        add(nbformat.v4.new_markdown_cell(introduction))
        add(
            nbformat.v4.new_code_cell(
                part_cell_source(part_id), metadata={"tags": [f"part:{part_id}"]}
            )
        )
        add(nbformat.v4.new_code_cell(check_cell_source(part_id)))
        for source in usage_cells:
            add(nbformat.v4.new_code_cell(source))
    add(nbformat.v4.new_markdown_cell(SUBMIT))
    add(nbformat.v4.new_code_cell("check()"))
    add(nbformat.v4.new_code_cell("submit()"))

    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(notebook)
    return notebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=NOTEBOOK_PATH, help=f"where to write (default: {NOTEBOOK_PATH})"
    )
    args = parser.parse_args(argv)
    nbformat.write(build_notebook(), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
