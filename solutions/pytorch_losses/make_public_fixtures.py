"""Regenerate the expected outputs the public tests compare against.

Usage: python solutions/pytorch_losses/make_public_fixtures.py [--out DIR]

Writes `<part_id>.pt` (tensors and numbers, loadable with weights_only=True) into DIR, by
default assignments/pytorch_losses/public_fixtures. Public seeds are below 10000; hidden tests
draw theirs at grading time.
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

import scale  # noqa: E402


def scale_fixture() -> dict[str, object]:
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1000), dtype=torch.float64)
    return {"x": x, "factor": 2.5, "y": scale.scale(x, 2.5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.save(scale_fixture(), out / "scale.pt")


if __name__ == "__main__":
    main()
