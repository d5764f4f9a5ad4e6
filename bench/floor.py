"""The floor both benchmarks compare against: the hidden suite's raw compute, no sandbox.

`FloorPlugin` gives the hidden tests the grader's fixtures, but runs every probe
in-process, against the reference and against a student folder, with torch imported once.
"""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.grading.plugin import MARKERS
from grader.grading.seeds import hidden_seed

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "pytorch_basics"
HIDDEN_TESTS = SOLUTIONS / "hidden_tests"
SEED = 20261122
# The hidden suite in-process; the GPU-only tests only where grading on CUDA.
PYTEST_ARGS = [
    str(HIDDEN_TESTS), "-p", "no:cacheprovider", "--noconftest", "--rootdir", str(HIDDEN_TESTS),
    "-c", "/dev/null", "-p", "no:terminal",
]  # fmt: skip


def pytest_args(device: str) -> list[str]:
    return PYTEST_ARGS if device == "cuda" else [*PYTEST_ARGS, "-m", "not cuda_only"]


class FloorPlugin:
    """The hidden suite's fixtures run in-process against one student folder: no sandbox."""

    def __init__(self, student_dir: Path, device: str) -> None:
        self.student_dir = student_dir
        self.device_name = device
        self.modules: dict[tuple[str, str], types.ModuleType] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        for marker in MARKERS:
            config.addinivalue_line("markers", marker)

    def _module(self, request: pytest.FixtureRequest, side: str) -> types.ModuleType:
        part = Path(str(request.node.fspath)).stem.removeprefix("test_")
        key = (side, part)
        if key not in self.modules:
            folder = self.student_dir if side == "student" else SOLUTIONS
            spec = importlib.util.spec_from_file_location(f"_{side}_{part}", folder / f"{part}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.modules[key] = module
        return self.modules[key]

    @pytest.fixture
    def seed(self, request: pytest.FixtureRequest) -> int:
        # The very inputs `grade --seed SEED` feeds this test.
        return hidden_seed(SEED, request.node.nodeid)

    @pytest.fixture
    def device(self) -> str:
        return self.device_name

    @pytest.fixture
    def student_source(self, request: pytest.FixtureRequest) -> str:
        return Path(self._module(request, "student").__file__ or "").read_text()

    @pytest.fixture
    def compare(self, request: pytest.FixtureRequest) -> Callable[..., tuple[Any, Any]]:
        student, reference = self._module(request, "student"), self._module(request, "reference")
        return lambda probe, /, **kw: (probe(student, **kw), probe(reference, **kw))

    @pytest.fixture
    def student(self, request: pytest.FixtureRequest) -> Callable[..., Any]:
        module = self._module(request, "student")
        return lambda probe, /, **kw: probe(module, **kw)

    @pytest.fixture
    def reference(self, request: pytest.FixtureRequest) -> Callable[..., Any]:
        module = self._module(request, "reference")
        return lambda probe, /, **kw: probe(module, **kw)
