"""Shared setup of the public tests: where your files are and how they are loaded.

Run them from the assignment folder with plain pytest::

    cd assignments/pytorch_graphs
    pytest public_tests

They test the files next to `public_tests/` (dynamic_net.py, ...). To test files
somewhere else, name that folder in GRADER_STUDENT_DIR::

    GRADER_STUDENT_DIR=path/to/my/files pytest public_tests

`python -m grader check` runs the same tests and prints a table per part. Passing them
is a good sign, not a guarantee: the grader's hidden tests use other inputs.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import nn

ASSIGNMENT_DIR = Path(__file__).resolve().parents[1]
FIXTURES_DIR = ASSIGNMENT_DIR / "public_fixtures"
COURSE_ROOT = ASSIGNMENT_DIR.parents[1]

# The tests use the grader's assertions (grader/testing.py), whose failure messages are
# written for you. When pytest starts inside the assignment folder the grader package
# is not on the import path yet, so add the course folder that holds it.
if importlib.util.find_spec("grader") is None and (COURSE_ROOT / "grader").is_dir():
    sys.path.insert(0, str(COURSE_ROOT))

CUDA_AVAILABLE = torch.cuda.is_available()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "points(n): how much this test weighs inside its part (part id = file name)"
    )


@pytest.fixture(scope="session")
def student_dir() -> Path:
    """The folder holding the files under test."""
    folder = Path(os.environ.get("GRADER_STUDENT_DIR") or ASSIGNMENT_DIR).resolve()
    if not folder.is_dir():
        pytest.fail(f"GRADER_STUDENT_DIR={folder} is not a folder.", pytrace=False)
    return folder


@pytest.fixture(scope="session")
def load_part(student_dir: Path) -> Iterator[Callable[[str], ModuleType]]:
    """Return a function that imports `<part_id>.py` from the student folder, once a session."""
    loaded: dict[str, ModuleType] = {}
    # On the path so that one of your files may import another.
    sys.path.insert(0, str(student_dir))

    def load(part_id: str) -> ModuleType:
        if part_id in loaded:
            return loaded[part_id]
        path = student_dir / f"{part_id}.py"
        if not path.is_file():
            pytest.fail(f"{path} not found: every part needs its own file.", pytrace=False)
        # Load by file location, so a same-named module elsewhere on the path (or one
        # imported earlier) can never be tested by mistake.
        spec = importlib.util.spec_from_file_location(part_id, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[part_id] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[part_id]
            raise
        loaded[part_id] = module
        return module

    yield load
    sys.path.remove(str(student_dir))
    for part_id in loaded:
        sys.modules.pop(part_id, None)


@pytest.fixture(scope="session")
def load_fixture() -> Callable[[str], dict[str, Any]]:
    """Return a function that reads `public_fixtures/<part_id>.pt` (a fresh copy each call)."""

    def load(part_id: str) -> dict[str, Any]:
        fixture: dict[str, Any] = torch.load(FIXTURES_DIR / f"{part_id}.pt", weights_only=True)
        return fixture

    return load


@pytest.fixture(
    params=[
        "cpu",
        pytest.param(
            "cuda", marks=pytest.mark.skipif(not CUDA_AVAILABLE, reason="CUDA is not available")
        ),
    ]
)
def device(request: pytest.FixtureRequest) -> torch.device:
    """Each test that takes `device` runs on the CPU and, where there is one, on the GPU."""
    return torch.device(request.param)


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


def _regression_net(d_in: int, h: int, d_out: int) -> nn.Sequential:
    # A plain torch.nn model: the checkpointing tests never depend on your other parts.
    layers = OrderedDict(linear1=nn.Linear(d_in, h), relu=nn.ReLU(), linear2=nn.Linear(h, d_out))
    return nn.Sequential(layers).to(torch.float64)


@pytest.fixture(scope="session")
def make_regression_net() -> Callable[[int, int, int], nn.Sequential]:
    """A function building linear2(relu(linear1(x))) from plain torch.nn modules, in float64."""
    return _regression_net
