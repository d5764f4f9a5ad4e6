"""Write the pretrained checkpoint that part `finetuning` starts from.

Usage: python solutions/pytorch_training/make_pretrained.py [--out PATH]

Trains the lecture's two-layer net (48 hidden units, 10 classes) on the 1,000 public
training digits with the reference `train_model`, seeded and on one thread, and saves its
state_dict as a dict of plain float32 tensors (about 16 KB) to
assignments/pytorch_training/pretrained.pt by default. The same torch writes the same
tensors. Students fine-tune its features for a new task (odd or even); the hidden tests
read this file on the trusted side and pass its tensors to the probes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

SOLUTIONS_DIR = Path(__file__).resolve().parent
ASSIGNMENT_DIR = SOLUTIONS_DIR.parents[1] / "assignments" / "pytorch_training"
DEFAULT_OUT = ASSIGNMENT_DIR / "pretrained.pt"
for folder in (SOLUTIONS_DIR, ASSIGNMENT_DIR / "public_tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import training  # noqa: E402
from conftest import load_digits, two_layer_net  # noqa: E402

HIDDEN = 48
PRETRAINING_SEED = 2026
PRETRAINING = {"epochs": 15, "batch_size": 50, "learning_rate": 0.1}


def pretrained_state() -> dict[str, torch.Tensor]:
    """The state_dict of the net trained on all ten digits, as plain tensors."""
    digits = load_digits()
    torch.manual_seed(PRETRAINING_SEED)
    model = two_layer_net(HIDDEN)
    training.train_model(model, digits["train_x"], digits["train_y"], **PRETRAINING)
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.save(pretrained_state(), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
