"""This assignment's own helpers for its public tests; the grader provides the rest.

`python -m grader check` runs these tests and prints a table per part. The fixtures every
assignment's public tests use (`student_dir`, `load_part`, `part`, `load_fixture`,
`expected`, `device`, the `points` marker) come from the grader's plugin,
`grader.student.plugin`, loaded below so that plain pytest works too::

    cd assignments/pytorch_graphs
    pytest public_tests

They test the files next to `public_tests/` (dynamic_net.py, ...). To test files
somewhere else, name that folder in GRADER_STUDENT_DIR::

    GRADER_STUDENT_DIR=path/to/my/files pytest public_tests

Passing them is a good sign, not a guarantee: the grader's hidden tests use other inputs.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

COURSE_ROOT = Path(__file__).resolve().parents[3]

# When pytest starts inside the assignment folder the grader package is not on the import
# path yet: add the course folder that holds it, for the plugin below.
if importlib.util.find_spec("grader") is None and (COURSE_ROOT / "grader").is_dir():
    sys.path.insert(0, str(COURSE_ROOT))

pytest_plugins = ("grader.student.plugin",)


class PretrainedNet(nn.Module):
    """A small stand-in for a downloaded model: a backbone of features and a classifier head.

    Its state_dict keys (backbone.linear1.weight, ..., head.bias) match the fixture's
    pretrained_state. The hidden tests build one like it, with other sizes and weights.
    """

    def __init__(self, d_in: int, h: int, feature_dim: int, old_classes: int) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            OrderedDict(
                linear1=nn.Linear(d_in, h),
                norm=nn.BatchNorm1d(h),
                relu=nn.ReLU(),
                linear2=nn.Linear(h, feature_dim),
                relu2=nn.ReLU(),
            )
        )
        self.head = nn.Linear(feature_dim, old_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result: torch.Tensor = self.head(self.backbone(x))
        return result


@pytest.fixture(scope="session")
def make_pretrained() -> Callable[..., PretrainedNet]:
    """Build a PretrainedNet(d_in, h, feature_dim, old_classes) in float64."""

    def make(d_in: int, h: int, feature_dim: int, old_classes: int) -> PretrainedNet:
        return PretrainedNet(d_in, h, feature_dim, old_classes).to(torch.float64)

    return make


def regression_net(d_in: int, h: int, d_out: int) -> nn.Sequential:
    # A plain torch.nn model: the checkpointing tests never depend on your other parts.
    layers = OrderedDict(linear1=nn.Linear(d_in, h), relu=nn.ReLU(), linear2=nn.Linear(h, d_out))
    return nn.Sequential(layers).to(torch.float64)


def state_of(module: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the module's state_dict, each tensor with storage of its own."""
    # A view would save the whole storage it looks into.
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


@pytest.fixture(scope="session")
def make_regression_net() -> Callable[[int, int, int], nn.Sequential]:
    """A function building linear2(relu(linear1(x))) from plain torch.nn modules, in float64."""
    return regression_net
