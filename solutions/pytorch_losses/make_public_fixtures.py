"""Regenerate the expected outputs the public tests compare against.

Usage: python solutions/pytorch_losses/make_public_fixtures.py [--out DIR]

Writes `mse.pt` and `cross_entropy.pt` (tensors and numbers, loadable with weights_only=True)
into DIR, by default assignments/pytorch_losses/public_fixtures. Public seeds are below 10000
(here 3000-3999); hidden tests draw theirs at grading time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

SOLUTIONS_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = SOLUTIONS_DIR.parents[1] / "assignments" / "pytorch_losses" / "public_fixtures"
if str(SOLUTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(SOLUTIONS_DIR))

import cross_entropy  # noqa: E402
import mse  # noqa: E402


def _loss_and_grad(function, x, other):
    x = x.clone().requires_grad_(True)
    loss = function(x, other)
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad


def mse_fixture() -> dict[str, object]:
    generator = torch.Generator().manual_seed(3001)
    pred = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    target = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    loss, grad = _loss_and_grad(mse.mse_loss, pred, target)
    return {"pred": pred, "target": target, "loss": loss, "grad": grad}


def cross_entropy_fixture() -> dict[str, object]:
    generator = torch.Generator().manual_seed(3002)
    logits = 3.0 * torch.randn(5, 4, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, 4, (5,), generator=generator, dtype=torch.int64)
    loss, grad = _loss_and_grad(cross_entropy.cross_entropy, logits, labels)
    generator = torch.Generator().manual_seed(3003)
    large_logits = 1e4 * torch.randn(6, 3, generator=generator, dtype=torch.float32)
    large_labels = torch.randint(0, 3, (6,), generator=generator, dtype=torch.int64)
    large_loss, large_grad = _loss_and_grad(cross_entropy.cross_entropy, large_logits, large_labels)
    return {
        "logits": logits,
        "labels": labels,
        "loss": loss,
        "grad": grad,
        "large_logits": large_logits,
        "large_labels": large_labels,
        "large_loss": large_loss,
        "large_grad": large_grad,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.save(mse_fixture(), out / "mse.pt")
    torch.save(cross_entropy_fixture(), out / "cross_entropy.pt")


if __name__ == "__main__":
    main()
