"""Build walkthrough.ipynb, the notebook that walks through the assignment.

Usage: python assignments/pytorch_basics/build_notebook.py [--out PATH]

This script is the notebook's source: edit it, rerun it, and commit both. The output
holds no cell outputs and has fixed cell ids, so rebuilding an unchanged script gives
a byte-identical file (tests/test_assignment_content.py checks that).

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
# PyTorch basics: a walkthrough

This notebook follows the lecture's running example: a two-layer ReLU network trained on
random data with an L2 loss, first with gradients written by hand, then with autograd, a
custom autograd function, `nn.Module`, `torch.optim` and a `DataLoader`; and, at the
end, the hardware half of the lecture: how fast is a matrix multiply on a CPU and on a GPU?

**How to work.** Each part has one cell marked `# part: <part_id>`. By default it
imports your functions from the part's file (for example `manual_backprop.py`, next to
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

import math

import torch

torch.manual_seed(0)

# The lecture's running example: N samples, D_in inputs, H hidden units, D_out outputs.
N, D_in, H, D_out = 64, 1000, 100, 10
x = torch.randn(N, D_in)
y = torch.randn(N, D_out)


# matplotlib is imported inside the plotting helpers only: the grader copies this cell's
# top-level imports in front of code it takes from a part cell, and it needs no plots.
def plot_losses(losses, title):
    \"\"\"Plot a training curve on a log scale.\"\"\"
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5, 3))
    ax.plot(losses)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    plt.show()


def plot_tflops(sizes, tflops_by_device):
    \"\"\"Plot achieved TFLOP/s against matrix size, one line per device.\"\"\"
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5, 3))
    for device_name, tflops in tflops_by_device.items():
        ax.plot(sizes, tflops, "o-", label=device_name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (n x n matmul)")
    ax.set_ylabel("TFLOP/s")
    ax.legend()
    plt.show()"""

PARTS: list[tuple[str, str, list[str]]] = [
    # (part id, markdown before the part cell, cells that use the part's functions)
    (
        "manual_backprop",
        """\
## Part 1: gradients by hand (`manual_backprop.py`)

The forward pass is `h = x @ w1`, `h_relu = relu(h)`, `y_pred = h_relu @ w2`,
`loss = ((y_pred - y) ** 2).sum()`. Derive the gradients of the loss with respect to
`w1` and `w2` with the chain rule and compute them with plain tensor operations (no
autograd in this part).""",
        [
            """\
w1 = torch.randn(D_in, H)
w2 = torch.randn(H, D_out)

# Compare your gradients with autograd's (autograd is fine here, outside your file).
loss, grad_w1, grad_w2 = forward_backward(x, y, w1, w2)
w1_check, w2_check = w1.clone().requires_grad_(), w2.clone().requires_grad_()
((torch.relu(x @ w1_check) @ w2_check - y) ** 2).sum().backward()
print("loss:", loss.item())
print("grad_w1 matches autograd:", torch.allclose(grad_w1, w1_check.grad, rtol=1e-4, atol=1e-2))
print("grad_w2 matches autograd:", torch.allclose(grad_w2, w2_check.grad, rtol=1e-4, atol=1e-2))""",
            """\
losses = train_manual(x, y, w1, w2, learning_rate=1e-6, steps=200)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
plot_losses(losses, "Part 1: gradients by hand")""",
        ],
    ),
    (
        "autograd_loop",
        """\
## Part 2: autograd (`autograd_loop.py`)

The same network, but `loss.backward()` computes the gradients. Update the weights in
place inside `torch.no_grad()` and zero their gradients after each step.""",
        [
            """\
w1 = torch.randn(D_in, H, requires_grad=True)
w2 = torch.randn(H, D_out, requires_grad=True)
losses = train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=200)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
print("w1 is still a leaf that requires grad:", w1.is_leaf and w1.requires_grad)
print("w1.grad is zero:", w1.grad is None or not w1.grad.any())
plot_losses(losses, "Part 2: autograd")""",
        ],
    ),
    (
        "custom_sigmoid",
        """\
## Part 3: a custom autograd function (`custom_sigmoid.py`)

Write the sigmoid as a `torch.autograd.Function` with its own `forward` and `backward`,
then train the network with a sigmoid in place of the ReLU. It must stay finite even
for inputs as large as 1e4.""",
        [
            """\
test_input = torch.tensor([-1e4, -10.0, 0.0, 10.0, 1e4], requires_grad=True)
test_output = sigmoid(test_input)
test_output.sum().backward()
print("sigmoid:", test_output.tolist())
print("gradient:", test_input.grad.tolist())

# gradcheck compares your backward with finite differences (it needs float64).
x_check = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
print("gradcheck passed:", torch.autograd.gradcheck(Sigmoid.apply, (x_check,)))""",
            """\
# Small first-layer weights keep x @ w1 in the range where the sigmoid is not flat.
w1 = (torch.randn(D_in, H) / math.sqrt(D_in)).requires_grad_()
w2 = torch.randn(H, D_out, requires_grad=True)
losses = train_sigmoid_net(x, y, w1, w2, learning_rate=1e-3, steps=200)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
plot_losses(losses, "Part 3: custom sigmoid")""",
        ],
    ),
    (
        "two_layer_net",
        """\
## Part 4: `nn.Module` and `torch.optim` (`two_layer_net.py`)

Package the network as a module whose submodules are `linear1` and `linear2`, and let
`torch.optim.SGD` do the update.""",
        [
            """\
model = TwoLayerNet(D_in, H, D_out)
print(model)
print("state_dict keys:", list(model.state_dict()))
print("ParallelBlock output shape:", tuple(ParallelBlock(D_in, D_out)(x).shape))

losses = train_two_layer_net(model, x, y, learning_rate=1e-1, steps=200)
print(f"loss: {losses[0]:.4g} -> {losses[-1]:.4g}")
plot_losses(losses, "Part 4: nn.Module + optim")""",
        ],
    ),
    (
        "dataloader_training",
        """\
## Part 5: minibatches with a `DataLoader` (`dataloader_training.py`)

Train on shuffled minibatches of 8 samples, then measure the mean squared error in eval
mode without building a graph.""",
        [
            """\
loader = make_loader(x, y, batch_size=8, shuffle=True)
model = TwoLayerNet(D_in, H, D_out)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)
print("MSE before training:", evaluate(model, loader))
losses = train_with_loader(model, loader, optimizer, epochs=20)
print("MSE after training:", evaluate(model, loader))
plot_losses(losses, "Part 5: DataLoader (one point per batch)")""",
        ],
    ),
    (
        "device_benchmark",
        """\
## Part 6: CPU vs GPU (`device_benchmark.py`)

The theoretical peak of a GPU is simple arithmetic; the achieved rate of a big matmul
comes close to it. On a GPU, remember that work runs asynchronously: synchronize before
reading the clock. Without a GPU the comparison below only shows the CPU.""",
        [
            """\
device = pick_device()
print("device:", device)
print(f"FP32 cores:   {peak_tflops(72, 64, 2, 1.77):.1f} TFLOP/s peak")
print(f"tensor cores: {peak_tflops(72, 8, 128, 1.77):.1f} TFLOP/s peak")""",
            """\
sizes = [128, 256, 512, 1024]
tflops_by_device = {"CPU": [matmul_tflops(n, "cpu") for n in sizes]}
if device.type == "cuda":
    tflops_by_device["GPU"] = [matmul_tflops(n, device) for n in sizes]
else:
    print("No CUDA device here: showing the CPU only.")

for device_name, tflops in tflops_by_device.items():
    for n, value in zip(sizes, tflops, strict=True):
        print(f"{device_name}: n = {n:5d}   {value:8.3f} TFLOP/s")
plot_tflops(sizes, tflops_by_device)""",
        ],
    ),
]

# What each part cell imports from the part's file: the names the later cells use.
PART_NAMES: dict[str, list[str]] = {
    "manual_backprop": ["forward_backward", "train_manual"],
    "autograd_loop": ["train_autograd"],
    "custom_sigmoid": ["Sigmoid", "sigmoid", "train_sigmoid_net"],
    "two_layer_net": ["ParallelBlock", "TwoLayerNet", "train_two_layer_net"],
    "dataloader_training": ["evaluate", "make_loader", "train_with_loader"],
    "device_benchmark": ["matmul_tflops", "peak_tflops", "pick_device"],
}


def part_cell_source(part_id: str) -> str:
    """Return the default content of a part's submission cell."""
    return "\n".join(
        [
            f"# part: {part_id}",
            f"# Write your code in {part_id}.py, or replace the import below with your own code.",
            f"from {part_id} import {', '.join(PART_NAMES[part_id])}",
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

    add(nbformat.v4.new_code_cell(colab_setup_source("pytorch_basics")))
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
