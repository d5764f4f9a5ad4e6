"""Build walkthrough.ipynb, the notebook that walks through the assignment.

Usage: python assignments/pytorch_graphs/build_notebook.py [--out PATH]

This script is the notebook's source: edit it, rerun it, and commit both. The output
holds no cell outputs and has fixed cell ids, so rebuilding an unchanged script gives
a byte-identical file (tests/test_pytorch_graphs.py checks that).

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
# PyTorch graphs: a walkthrough

The second half of the lecture: PyTorch builds a **dynamic graph** on every forward pass,
so plain Python control flow just works; a **static graph** (here `torch.export`) is
built once and needs control flow as a graph operation (`torch.cond`); then two
everyday skills: **saving and resuming** training, and **reusing a pretrained model**.

**How to work.** Each part has one cell marked `# part: <part_id>`. By default it
imports your functions from the part's file (for example `dynamic_net.py`, next to
this notebook), so you can write your code there and use this notebook to try it out.
Or replace that cell's import with your own code: the grader then takes the code from
the cell. Either way, keep the function names and signatures of the docstrings in the
`.py` files.

Run the notebook top to bottom. It stops at the first part that is not implemented yet,
with that function's `NotImplementedError`. Below each part's cell, `check("<part_id>")`
runs that part's public tests on the code as you ran it (no need to save first), the same
tests and feedback as `python -m grader check`; `check()` at the end runs every part's.

**In Google Colab**, run the first cell before anything else: it installs the kit."""

SUBMIT = """\
## Check everything, then submit

`check()` runs the public tests of every part on the code as you ran it. `submit()` writes
the zip to upload to Gradescope and says where it is (in Colab it also downloads it). It
zips the notebook **as saved**: save it first (File > Save, or Ctrl+S / Cmd+S); in Colab
it takes the notebook as it is now."""

SETUP = """\
%matplotlib inline
from grader.notebook import check, submit

# Reload your .py files when they change, so edits show up without restarting.
%load_ext autoreload
%autoreload 2

import random
import tempfile
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)

# The lecture's running example: N samples, D_in inputs, H hidden units, D_out outputs.
N, D_in, H, D_out = 64, 1000, 100, 10
x = torch.randn(N, D_in)
y = torch.randn(N, D_out)

# Checkpoints of this walkthrough go to a temporary folder, removed when the kernel stops.
scratch = tempfile.TemporaryDirectory()
scratch_dir = Path(scratch.name)


# matplotlib is imported inside the plotting helper only: the grader copies this cell's
# top-level imports in front of code it takes from a part cell, and it needs no plots.
def plot_losses(curves, title):
    \"\"\"Plot training curves (a dict of name -> losses) on a log scale.\"\"\"
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5, 3))
    for name, losses in curves.items():
        ax.plot(losses, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    plt.show()"""

PARTS: list[tuple[str, str, list[str]]] = [
    # (part id, markdown before the part cell, cells that use the part's functions)
    (
        "dynamic_net",
        """\
## Part 1: a dynamic graph (`dynamic_net.py`)

`DynamicNet` runs its middle layer 0 to 3 times, a new number every forward pass, and
reuses the same weights each time. Autograd needs nothing special: it records what ran.
The depth comes from a `random.Random` you pass in, so a run can be repeated exactly.""",
        [
            """\
model = DynamicNet(D_in, H, D_out)
print("parameters:", [name for name, _ in model.named_parameters()])

# One middle layer, used twice: its gradient adds up both uses.
model(x, 2).sum().backward()
print("middle_linear.weight.grad norm:", model.middle_linear.weight.grad.norm().item())

rng = random.Random(0)
print("ten depths:", [sample_num_middle(rng) for _ in range(10)])""",
            """\
model = DynamicNet(D_in, H, D_out)
losses = train_dynamic_net(model, x, y, random.Random(0), learning_rate=1e-4, steps=300)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
plot_losses({"DynamicNet": losses}, "Part 1: a new graph every step")""",
        ],
    ),
    (
        "static_graphs",
        """\
## Part 2: static graphs and control flow (`static_graphs.py`)

`torch.export` builds a static graph once. A Python `if` runs while the graph is built,
so exporting it *traces* one branch; `torch.cond` puts both branches in the graph. (The
lecture's `torch.jit.script` / `torch.jit.trace` are deprecated in current PyTorch.)""",
        [
            """\
w1, w2 = torch.randn(D_in, D_out), torch.randn(D_in, D_out)
positive, negative = torch.tensor(1.0), torch.tensor(-1.0)
print("eager, z > 0 uses w1:", torch.allclose(conditional(x, positive, w1, w2), x @ w1))
print("eager, z < 0 uses w2:", torch.allclose(conditional(x, negative, w1, w2), x @ w2))

program = export_conditional(x, positive, w1, w2)
print(program.graph)  # one torch.cond node; the branches are subgraphs
run = program.module()
print("exported, run with z < 0 uses w2:", torch.allclose(run(x, negative, w1, w2), x @ w2))""",
            """\
traced = trace_conditional(x, 1.0, w1, w2)
print(traced.graph)  # one matmul: the branch z = 1.0 took
run = traced.module()
print("traced, run with z = 1:", torch.allclose(run(x, 1.0, w1, w2), x @ w1))
try:
    run(x, -1.0, w1, w2)
except Exception as error:  # torch.export guards the value it traced with
    print("traced, run with z = -1 refuses:", type(error).__name__, str(error).splitlines()[0])""",
        ],
    ),
    (
        "checkpointing",
        """\
## Part 3: saving, loading and resuming (`checkpointing.py`)

Save state_dicts and load them with `weights_only=True`. To resume training exactly,
save the optimizer's state too: below, a run interrupted after 20 steps and resumed from
its checkpoint gives the same losses as a run never interrupted.""",
        [
            """\
def regression_net():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(D_in, H), nn.ReLU(), nn.Linear(H, D_out))


model = regression_net()
save_weights(model, scratch_dir / "weights.pt")
copy = load_weights(nn.Sequential(nn.Linear(D_in, H), nn.ReLU(), nn.Linear(H, D_out)),
                    scratch_dir / "weights.pt")
print("the loaded copy computes the same:", torch.equal(copy(x), model(x)))""",
            """\
def adam_step(model, optimizer):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


model = regression_net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
straight = [adam_step(model, optimizer) for _ in range(50)]

model = regression_net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
first = [adam_step(model, optimizer) for _ in range(20)]
save_checkpoint(scratch_dir / "checkpoint.pt", model, optimizer, 20, first)

fresh = regression_net()
fresh_optimizer = torch.optim.Adam(fresh.parameters(), lr=1e-3)
resumed = resume_training(scratch_dir / "checkpoint.pt", fresh, fresh_optimizer, x, y, 50)
print("resumed run == uninterrupted run:", resumed == straight)
plot_losses({"uninterrupted": straight, "resumed": resumed}, "Part 3: resuming")""",
        ],
    ),
    (
        "transfer_learning",
        """\
## Part 4: reusing a pretrained model (`transfer_learning.py`)

A stand-in for a model from a model zoo, built here (nothing is downloaded): a backbone
with BatchNorm, and a head for 7 classes. Freeze the backbone, give it a head for 3
classes, and train only the head.""",
        [
            """\
class PretrainedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(OrderedDict(
            linear1=nn.Linear(D_in, H), norm=nn.BatchNorm1d(H), relu=nn.ReLU(),
            linear2=nn.Linear(H, 32), relu2=nn.ReLU(),
        ))
        self.head = nn.Linear(32, 7)

    def forward(self, inputs):
        return self.head(self.backbone(inputs))


model = replace_head(PretrainedNet(), 3)
print(model)
trainable = [name for name, p in model.named_parameters() if p.requires_grad]
print("trainable:", trainable)
held = head_optimizer(model, 0.1).param_groups[0]["params"]
print("the optimizer holds", len(held), "tensors")""",
            """\
labels = torch.randint(3, (N,))
running_mean = model.backbone.norm.running_mean.clone()
losses = train_head(model, x, labels, learning_rate=0.1, steps=100)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
print("BatchNorm statistics kept:", torch.equal(running_mean, model.backbone.norm.running_mean))
plot_losses({"head only": losses}, "Part 4: training a new head")""",
        ],
    ),
]

# What each part cell imports from the part's file: the names the later cells use.
PART_NAMES: dict[str, list[str]] = {
    "dynamic_net": ["DynamicNet", "sample_num_middle", "train_dynamic_net"],
    "static_graphs": [
        "Conditional",
        "PythonConditional",
        "conditional",
        "export_conditional",
        "trace_conditional",
    ],
    "checkpointing": [
        "load_checkpoint",
        "load_weights",
        "resume_training",
        "save_checkpoint",
        "save_weights",
    ],
    "transfer_learning": ["head_optimizer", "replace_head", "train_head"],
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

    add(nbformat.v4.new_code_cell(colab_setup_source("pytorch_graphs")))
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
