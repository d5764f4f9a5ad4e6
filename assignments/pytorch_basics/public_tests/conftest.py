"""This assignment's own helpers for its public tests; the grader provides the rest.

`python -m grader check` runs these tests and prints a table per part. The fixtures every
assignment's public tests use (`student_dir`, `load_part`, `part`, `load_fixture`,
`expected`, `device`, the `points` marker) come from the grader's plugin,
`grader.student.plugin`, loaded below so that plain pytest works too::

    cd assignments/pytorch_basics
    pytest public_tests

They test the files next to `public_tests/` (manual_backprop.py, ...). To test files
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


def random_problem(
    seed: int,
    *,
    n: int,
    d_in: int,
    h: int,
    d_out: int,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return x (n, d_in), y (n, d_out), w1 (d_in, h), w2 (h, d_out), all random."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(n, d_in), (n, d_out), (d_in, h), (h, d_out)]
    x, y, w1, w2 = (
        torch.randn(shape, generator=generator, dtype=dtype).to(device) for shape in shapes
    )
    return x, y, w1, w2


@pytest.fixture(scope="session")
def make_problem() -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The `random_problem` function above, for the test files."""
    return random_problem


def two_layer_sequential(d_in: int, h: int, d_out: int) -> nn.Sequential:
    # The state_dict keys (linear1.weight, ...) match TwoLayerNet's, so a fixture's
    # weights load into either. Tests of later parts use this plain torch.nn model,
    # never your TwoLayerNet, so a bug in part 4 cannot fail them.
    return nn.Sequential(
        OrderedDict(linear1=nn.Linear(d_in, h), relu=nn.ReLU(), linear2=nn.Linear(h, d_out))
    )


def state_of(module: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the module's state_dict, each tensor with storage of its own."""
    # A view would save the whole storage it looks into.
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


@pytest.fixture(scope="session")
def make_sequential_net() -> Callable[[int, int, int], nn.Sequential]:
    """A function building linear2(relu(linear1(x))) from plain torch.nn modules."""
    return two_layer_sequential
