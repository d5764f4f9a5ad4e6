"""Lets plain pytest run these tests: `cd assignments/pytorch_training && pytest public_tests`.

`python -m grader check` loads the grader's public-test plugin itself; plain pytest needs it
named here. The plugin provides the fixtures (`part`, `load_part`, `expected`, `load_fixture`,
`device`, `student_dir`) and the `points` marker; this file adds the tests' model and data
(`two_layer_net`, `load_digits`, `PRETRAINED_FILE`), which the tests' `@public_fixture`
functions use too.
To test the files of another folder: `GRADER_STUDENT_DIR=path/to/files pytest public_tests`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

COURSE_ROOT = Path(__file__).resolve().parents[3]

# Started inside the assignment folder, pytest finds the grader only if it is installed:
# otherwise put the course folder that holds it on the import path, for the plugin below.
if importlib.util.find_spec("grader") is None and (COURSE_ROOT / "grader").is_dir():
    sys.path.insert(0, str(COURSE_ROOT))

pytest_plugins = ("grader.student.plugin",)


DIGITS_FILE = Path(__file__).resolve().parents[1] / "digits.pt"
# The checkpoint part `finetuning` starts from: two_layer_net(48) trained on all ten digits.
PRETRAINED_FILE = Path(__file__).resolve().parents[1] / "pretrained.pt"


def two_layer_net(hidden: int) -> nn.Sequential:
    """The lecture's two-layer net for 8x8 digits: 64 pixels, `hidden` units, dropout, 10 classes.

    The hidden tests build the same one (other sizes), seeded with torch.manual_seed.
    """
    layers = OrderedDict(
        linear1=nn.Linear(64, hidden),
        relu=nn.ReLU(),
        dropout=nn.Dropout(0.2),
        linear2=nn.Linear(hidden, 10),
    )
    return nn.Sequential(layers)


def load_digits(count: int | None = None) -> dict[str, torch.Tensor]:
    """The public digits as float32 pixels in [0, 1] and int64 labels (the first `count`
    training digits only, when given)."""
    raw = torch.load(DIGITS_FILE, weights_only=True)
    train = slice(None) if count is None else slice(0, count)
    return {
        "train_x": raw["train_x"][train].to(torch.float32) / 16.0,
        "train_y": raw["train_y"][train].to(torch.int64),
        "val_x": raw["val_x"].to(torch.float32) / 16.0,
        "val_y": raw["val_y"].to(torch.int64),
    }
