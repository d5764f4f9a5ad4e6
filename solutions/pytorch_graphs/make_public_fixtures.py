"""Regenerate the expected outputs that the public tests compare against.

Usage: python solutions/pytorch_graphs/make_public_fixtures.py [--out DIR]

Writes one `<part_id>.pt` per part that has one (a dict of tensors, numbers and lists,
loadable with `torch.load(path, weights_only=True)`) into DIR, by default
assignments/pytorch_graphs/public_fixtures. Run it after changing a reference solution
or a public test's inputs, and commit the result; tests/test_pytorch_graphs.py checks
that regenerating gives the same values (within tolerance, so on any CPU).

The seeds are public (2000-2999). Hidden tests draw theirs at grading time, so these
files reveal nothing about them. Everything runs in float64 on one CPU thread.
static_graphs has no fixture: its public tests compute x @ w1 and x @ w2 themselves.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

SOLUTIONS_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = SOLUTIONS_DIR.parents[1] / "assignments" / "pytorch_graphs" / "public_fixtures"

# The reference modules live next to this script; make them importable however it runs.
if str(SOLUTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(SOLUTIONS_DIR))

import checkpointing  # noqa: E402
import dynamic_net  # noqa: E402
import transfer_learning  # noqa: E402

DTYPE = torch.float64

Fixture = dict[str, Any]


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    # clone() so every tensor owns exactly its own storage (a view would save the whole
    # storage it looks into).
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


def dynamic_net_fixture() -> Fixture:
    d_in, h, d_out, n = 10, 8, 3, 6
    generator = torch.Generator().manual_seed(2001)
    fixture: Fixture = {
        "seed": 2001,
        "dims": [d_in, h, d_out],
        "x": torch.randn(n, d_in, generator=generator, dtype=DTYPE),
        "y": torch.randn(n, d_out, generator=generator, dtype=DTYPE),
        "learning_rate": 1e-3,
        "steps": 12,
        "rng_seed": 2011,
    }
    torch.manual_seed(2001)
    model = dynamic_net.DynamicNet(d_in, h, d_out).to(DTYPE)
    fixture["state"] = _state(model)
    with torch.no_grad():
        fixture["outputs"] = [model(fixture["x"], depth) for depth in range(4)]
    fixture["losses"] = dynamic_net.train_dynamic_net(
        model,
        fixture["x"],
        fixture["y"],
        random.Random(fixture["rng_seed"]),
        learning_rate=fixture["learning_rate"],
        steps=fixture["steps"],
    )
    fixture["state_trained"] = _state(model)
    return fixture


def regression_net(d_in: int, h: int, d_out: int) -> nn.Sequential:
    """The plain torch.nn model the public tests of checkpointing build."""
    layers = OrderedDict(linear1=nn.Linear(d_in, h), relu=nn.ReLU(), linear2=nn.Linear(h, d_out))
    return nn.Sequential(layers).to(DTYPE)


def checkpointing_fixture() -> Fixture:
    d_in, h, d_out, n = 9, 7, 2, 10
    generator = torch.Generator().manual_seed(2003)
    fixture: Fixture = {
        "seed": 2003,
        "dims": [d_in, h, d_out],
        "x": torch.randn(n, d_in, generator=generator, dtype=DTYPE),
        "y": torch.randn(n, d_out, generator=generator, dtype=DTYPE),
        "learning_rate": 0.01,
        "stop_at": 4,
        "total_steps": 10,
    }
    torch.manual_seed(2003)
    model = regression_net(d_in, h, d_out)
    fixture["state"] = _state(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=fixture["learning_rate"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.pt"
        # Train the first part, save, and resume into a fresh model and optimizer.
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": 0,
                "losses": [],
            },
            path,
        )
        losses = checkpointing.resume_training(
            path, model, optimizer, fixture["x"], fixture["y"], fixture["stop_at"]
        )
        checkpointing.save_checkpoint(path, model, optimizer, fixture["stop_at"], losses)
        torch.manual_seed(2004)
        resumed = regression_net(d_in, h, d_out)
        resumed_optimizer = torch.optim.Adam(resumed.parameters(), lr=fixture["learning_rate"])
        fixture["losses"] = checkpointing.resume_training(
            path, resumed, resumed_optimizer, fixture["x"], fixture["y"], fixture["total_steps"]
        )
    fixture["state_trained"] = _state(resumed)
    return fixture


def _public_pretrained_net() -> type[nn.Module]:
    """The PretrainedNet the public tests build (their conftest), so the fixture fits it."""
    path = DEFAULT_OUT.parent / "public_tests" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_pytorch_graphs_public_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model_class: type[nn.Module] = module.PretrainedNet
    return model_class


def transfer_learning_fixture() -> Fixture:
    d_in, h, feature_dim, old_classes, num_classes, n = 8, 10, 6, 5, 3, 12
    generator = torch.Generator().manual_seed(2004)
    fixture: Fixture = {
        "seed": 2004,
        "dims": [d_in, h, feature_dim, old_classes],
        "num_classes": num_classes,
        "x": torch.randn(n, d_in, generator=generator, dtype=DTYPE),
        "labels": torch.randint(num_classes, (n,), generator=generator),
        "learning_rate": 0.1,
        "steps": 10,
    }
    torch.manual_seed(2004)
    model = _public_pretrained_net()(d_in, h, feature_dim, old_classes).to(DTYPE)
    # Pretrained BatchNorm statistics: not the defaults, so that losing them shows.
    with torch.no_grad():
        model.backbone.norm.running_mean.copy_(0.3 * torch.randn(h, generator=generator))
        model.backbone.norm.running_var.copy_(0.5 + torch.rand(h, generator=generator))
    fixture["pretrained_state"] = _state(model)
    transfer_learning.replace_head(model, num_classes)
    fixture["head_state"] = _state(model.head)
    fixture["losses"] = transfer_learning.train_head(
        model,
        fixture["x"],
        fixture["labels"],
        learning_rate=fixture["learning_rate"],
        steps=fixture["steps"],
    )
    fixture["head_state_trained"] = _state(model.head)
    return fixture


FIXTURES: dict[str, Callable[[], Fixture]] = {
    "dynamic_net": dynamic_net_fixture,
    "checkpointing": checkpointing_fixture,
    "transfer_learning": transfer_learning_fixture,
}


def write_fixtures(out_dir: Path) -> list[Path]:
    """Write every part's fixture into `out_dir`; return the paths written."""
    # One thread: a multi-threaded float64 matmul may sum in a different order from run
    # to run.
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
