"""Time `grade` on the reference submission against the floor, and print the ratio.

The floor is what the same hidden tests cost with no isolation at all: one fresh process
that imports torch and runs every test's probes in-process, against the reference and
against a second copy of the reference standing in for the student (so the raw compute
of both sides is counted, as in a real differential test). `grade` adds the sandbox:
a fork server, one forked child per test, files in and out, decoding.

Usage: python bench/bench_grade.py [--repeats N] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "pytorch_basics"
HIDDEN_TESTS = SOLUTIONS / "hidden_tests"
SEED = 20261122


class FloorPlugin:
    """The hidden suite's fixtures, run in-process with no sandbox (the floor)."""

    def __init__(self, device: str) -> None:
        self.device_name = device
        self.modules: dict[tuple[str, str], types.ModuleType] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        for marker in (
            "points(n)",
            "static_rule",
            "self_reported",
            "visibility(level)",
            "cuda_only",
        ):
            config.addinivalue_line("markers", marker)

    def _module(self, request: pytest.FixtureRequest, side: str) -> types.ModuleType:
        part = Path(str(request.node.fspath)).stem.removeprefix("test_")
        key = (side, part)
        if key not in self.modules:
            spec = importlib.util.spec_from_file_location(
                f"_{side}_{part}", SOLUTIONS / f"{part}.py"
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.modules[key] = module
        return self.modules[key]

    @pytest.fixture
    def seed(self) -> int:
        return SEED

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


def run_floor(device: str) -> int:
    """The body of the floor process: import torch, run the suite in-process."""
    import torch

    if device == "cpu":
        torch.set_num_threads(1)
    args = [str(HIDDEN_TESTS), "-q", "-p", "no:cacheprovider", "--noconftest"]
    args += ["--rootdir", str(HIDDEN_TESTS), "-c", "/dev/null"]
    if device != "cuda":
        args += ["-m", "not cuda_only"]
    return int(pytest.main(args, plugins=[FloorPlugin(device)]))


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        return run_floor(args.device)
    floor_command = [sys.executable, __file__, "--floor", "--device", args.device]
    grade_command = [sys.executable, "-m", "grader", "grade", str(SOLUTIONS)]
    grade_command += ["--device", args.device, "--seed", str(SEED)]
    floors, grades = [], []
    for _ in range(args.repeats):
        floors.append(timed(floor_command))
        grades.append(timed(grade_command))
    floor, grade = statistics.median(floors), statistics.median(grades)
    print(f"device: {args.device}, {args.repeats} runs each, medians")
    print(f"floor (import torch + the hidden tests' raw compute, one process): {floor:.2f} s")
    print(f"grade (every test isolated in its own sandboxed process):        {grade:.2f} s")
    print(f"ratio grade / floor: {grade / floor:.2f}x  (first milestone: <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
