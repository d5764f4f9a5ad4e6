"""Regenerate the expected outputs that the public tests compare against.

Usage: python solutions/pytorch_basics/make_public_fixtures.py [--out DIR]

Writes one `<part_id>.pt` per part (a dict of tensors, numbers and lists, loadable with
`torch.load(path, weights_only=True)`) into DIR, by default
assignments/pytorch_basics/public_fixtures. Run it after changing a reference solution
or a public test's inputs, and commit the result; tests/test_assignment_content.py
checks that regenerating changes nothing.

The seeds are public (1000-1999). Hidden tests draw theirs at grading time, so these
files reveal nothing about them. Everything runs in float64 on one CPU thread, so the
files come out byte-for-byte the same on every run.
"""

from __future__ import annotations

import argparse
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

SOLUTIONS_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = SOLUTIONS_DIR.parents[1] / "assignments" / "pytorch_basics" / "public_fixtures"

# The reference modules live next to this script; make them importable however it runs.
if str(SOLUTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(SOLUTIONS_DIR))

import autograd_loop  # noqa: E402
import custom_sigmoid  # noqa: E402
import dataloader_training  # noqa: E402
import manual_backprop  # noqa: E402
import two_layer_net  # noqa: E402

# Small enough that all fixtures together stay a few tens of KB.
N, D_IN, H, D_OUT = 8, 20, 10, 3
DTYPE = torch.float64

Fixture = dict[str, Any]


def _random_problem(seed: int) -> Fixture:
    """Return x, y, w1, w2 of the running example's kind, drawn from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    return {
        "seed": seed,
        "x": torch.randn(N, D_IN, generator=generator, dtype=DTYPE),
        "y": torch.randn(N, D_OUT, generator=generator, dtype=DTYPE),
        "w1": torch.randn(D_IN, H, generator=generator, dtype=DTYPE),
        "w2": torch.randn(H, D_OUT, generator=generator, dtype=DTYPE),
    }


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    # clone() so every tensor owns exactly its own storage (a view would save the whole
    # storage it looks into).
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


def manual_backprop_fixture() -> Fixture:
    fixture = _random_problem(seed=1001)
    x, y, w1, w2 = (fixture[k] for k in ("x", "y", "w1", "w2"))
    loss, grad_w1, grad_w2 = manual_backprop.forward_backward(x, y, w1, w2)
    fixture.update(loss=loss, grad_w1=grad_w1, grad_w2=grad_w2, learning_rate=1e-4, steps=10)
    w1_trained, w2_trained = w1.clone(), w2.clone()
    fixture["losses"] = manual_backprop.train_manual(
        x, y, w1_trained, w2_trained, learning_rate=fixture["learning_rate"], steps=10
    )
    fixture.update(w1_trained=w1_trained, w2_trained=w2_trained)
    return fixture


def autograd_loop_fixture() -> Fixture:
    fixture = _random_problem(seed=1002)
    fixture.update(learning_rate=1e-4, steps=10)
    w1 = fixture["w1"].clone().requires_grad_()
    w2 = fixture["w2"].clone().requires_grad_()
    fixture["losses"] = autograd_loop.train_autograd(
        fixture["x"], fixture["y"], w1, w2, learning_rate=fixture["learning_rate"], steps=10
    )
    fixture.update(w1_trained=w1.detach().clone(), w2_trained=w2.detach().clone())
    return fixture


def custom_sigmoid_fixture() -> Fixture:
    fixture = _random_problem(seed=1003)
    # Values that matter for a sigmoid: both tails, zero, and ordinary inputs.
    generator = torch.Generator().manual_seed(1013)
    sigmoid_input = torch.cat(
        [
            torch.tensor([-1e4, -50.0, -10.0, 0.0, 10.0, 50.0, 1e4], dtype=DTYPE),
            3 * torch.randn(13, generator=generator, dtype=DTYPE),
        ]
    ).requires_grad_()
    sigmoid_output = custom_sigmoid.sigmoid(sigmoid_input)
    # The gradient of sum(output * weights) is weights * y * (1 - y).
    upstream = torch.randn(sigmoid_input.shape, generator=generator, dtype=DTYPE)
    (sigmoid_grad,) = torch.autograd.grad(sigmoid_output, sigmoid_input, upstream)
    fixture.update(
        sigmoid_input=sigmoid_input.detach(),
        sigmoid_upstream=upstream,
        sigmoid_output=sigmoid_output.detach(),
        sigmoid_grad=sigmoid_grad,
        learning_rate=3e-3,
        steps=10,
    )
    w1 = fixture["w1"].clone().requires_grad_()
    w2 = fixture["w2"].clone().requires_grad_()
    fixture["losses"] = custom_sigmoid.train_sigmoid_net(
        fixture["x"], fixture["y"], w1, w2, learning_rate=fixture["learning_rate"], steps=10
    )
    fixture.update(w1_trained=w1.detach().clone(), w2_trained=w2.detach().clone())
    return fixture


def two_layer_net_fixture() -> Fixture:
    fixture = {
        key: value for key, value in _random_problem(seed=1004).items() if key in ("seed", "x", "y")
    }
    torch.manual_seed(1004)
    net = two_layer_net.TwoLayerNet(D_IN, H, D_OUT).to(DTYPE)
    block = two_layer_net.ParallelBlock(D_IN, D_OUT).to(DTYPE)
    with torch.no_grad():
        fixture.update(
            net_state=_state(net),
            net_output=net(fixture["x"]),
            block_state=_state(block),
            block_output=block(fixture["x"]),
        )
    fixture.update(learning_rate=5e-2, steps=10)
    fixture["losses"] = two_layer_net.train_two_layer_net(
        net, fixture["x"], fixture["y"], learning_rate=fixture["learning_rate"], steps=10
    )
    fixture["net_state_trained"] = _state(net)
    return fixture


def _sequential_net() -> nn.Sequential:
    # Part 5 is tested on its own, so its model is plain torch.nn, never part 4's class
    # (the public tests build the same one; the names give TwoLayerNet's state_dict keys).
    layers = OrderedDict(linear1=nn.Linear(D_IN, H), relu=nn.ReLU(), linear2=nn.Linear(H, D_OUT))
    return nn.Sequential(layers).to(DTYPE)


def dataloader_training_fixture() -> Fixture:
    # 10 samples in batches of 4: the last batch holds only 2, which is what makes
    # evaluate()'s averaging matter.
    generator = torch.Generator().manual_seed(1005)
    fixture: Fixture = {
        "seed": 1005,
        "x": torch.randn(10, D_IN, generator=generator, dtype=DTYPE),
        "y": torch.randn(10, D_OUT, generator=generator, dtype=DTYPE),
        "batch_size": 4,
        "epochs": 3,
        "learning_rate": 5e-2,
    }
    torch.manual_seed(1005)
    model = _sequential_net()
    fixture["model_state"] = _state(model)
    loader = DataLoader(TensorDataset(fixture["x"], fixture["y"]), batch_size=4, shuffle=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=fixture["learning_rate"])
    fixture["losses"] = dataloader_training.train_with_loader(model, loader, optimizer, epochs=3)
    fixture["model_state_trained"] = _state(model)
    fixture["mse_trained"] = dataloader_training.evaluate(model, loader)
    return fixture


FIXTURES: dict[str, Callable[[], Fixture]] = {
    "manual_backprop": manual_backprop_fixture,
    "autograd_loop": autograd_loop_fixture,
    "custom_sigmoid": custom_sigmoid_fixture,
    "two_layer_net": two_layer_net_fixture,
    "dataloader_training": dataloader_training_fixture,
}


def write_fixtures(out_dir: Path) -> list[Path]:
    """Write every part's fixture into `out_dir`; return the paths written."""
    # One thread: a multi-threaded float64 matmul may sum in a different order from run
    # to run, and then the files would not be byte-for-byte reproducible.
    torch.set_num_threads(1)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for part_id, build in FIXTURES.items():
        path = out_dir / f"{part_id}.pt"
        torch.save(build(), path)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    for path in write_fixtures(args.out):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
