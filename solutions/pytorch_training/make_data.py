"""Write the digits of pytorch_training from scikit-learn's 8x8 digits (1,797 images).

Usage: python solutions/pytorch_training/make_data.py   (needs scikit-learn; grading does not)

A fixed shuffle splits them three ways: 1,000 for training and 297 for validation go to
students in assignments/pytorch_training/digits.pt; 500 held-out digits stay here, in
held_out_digits.pt, whose labels never reach the student side (the hidden tests pass the
inputs to the probes and score the predictions that come back). Pixels are kept as uint8
(0 to 16), labels as uint8: the files stay small, and the tests convert them.
"""

from __future__ import annotations

from pathlib import Path

import torch
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent
PUBLIC = HERE.parents[1] / "assignments" / "pytorch_training" / "digits.pt"
HELD_OUT = HERE / "held_out_digits.pt"
TRAIN, VALIDATION = 1000, 297
SPLIT_SEED = 2026


def main() -> None:
    digits = load_digits()
    images = torch.as_tensor(digits.data, dtype=torch.uint8)
    labels = torch.as_tensor(digits.target, dtype=torch.uint8)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(SPLIT_SEED))
    images, labels = images[order], labels[order]
    end = TRAIN + VALIDATION
    torch.save(
        {
            "train_x": images[:TRAIN].clone(),
            "train_y": labels[:TRAIN].clone(),
            "val_x": images[TRAIN:end].clone(),
            "val_y": labels[TRAIN:end].clone(),
        },
        PUBLIC,
    )
    torch.save({"x": images[end:].clone(), "y": labels[end:].clone()}, HELD_OUT)
    print(f"wrote {PUBLIC} and {HELD_OUT}")


if __name__ == "__main__":
    main()
