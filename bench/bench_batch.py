"""Seconds per submission: `grade` alone, inside `batch` with 1 and 2 workers, and the floor.

All on the same submissions (copies of the reference solution unless --submissions names a
class folder), with the same seed, in one run:

- grade alone: one `python -m grader grade` per submission (a Python start, `import torch`
  and a fork server's start each time);
- batch, 1 and 2 workers: `python -m grader batch --force` over all of them, wall time
  divided by the number of submissions (worker start included), and the steady state
  (the mean `duration_s` of the reports: what one more submission costs a warm worker);
- the floor: the raw compute of the tests, with torch imported once and every hidden probe
  run in one process against the reference and against the submission, no isolation.

Targets (issue 7): batch steady state <= 1.3x the floor; 2 workers >= 1.7x the throughput
of 1 (on 2 cores).

Usage: python bench/bench_batch.py [--count N] [--submissions DIR] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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
    """The hidden suite's fixtures run in-process against one student folder: no sandbox."""

    def __init__(self, student_dir: Path, device: str) -> None:
        self.student_dir = student_dir
        self.device_name = device
        self.modules: dict[tuple[str, str], types.ModuleType] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        for marker in ("points(n)", "static_rule", "visibility(level)", "cuda_only"):
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
        from grader.plugin import hidden_seed

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


def run_floor(submissions: list[Path], device: str) -> list[float]:
    """Seconds per submission of the suite run in-process, torch already imported."""
    import torch

    torch.set_num_threads(1)
    args = [str(HIDDEN_TESTS), "-q", "-p", "no:cacheprovider", "--noconftest"]
    args += ["--rootdir", str(HIDDEN_TESTS), "-c", "/dev/null", "-p", "no:terminal"]
    if device != "cuda":
        args += ["-m", "not cuda_only"]
    seconds = []
    for folder in submissions:
        started = time.perf_counter()
        pytest.main(args, plugins=[FloorPlugin(folder, device)])
        seconds.append(time.perf_counter() - started)
    return seconds


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}")
    return elapsed


def batch_seconds(root: Path, out: Path, workers: int, device: str) -> tuple[float, float]:
    """(wall seconds per submission, mean steady-state seconds per submission)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "grader", "batch", str(root), "--out", str(out)]
    command += ["--workers", str(workers), "--seed", str(SEED), "--device", device, "--force"]
    wall = timed(command)
    durations = [
        float(json.loads(path.read_text())["duration_s"]) for path in out.glob("*/report.json")
    ]
    return wall / len(durations), statistics.fmean(durations)


def make_class(root: Path, count: int) -> list[Path]:
    folders = []
    for index in range(count):
        folder = root / f"student-{index:02d}"
        folder.mkdir(parents=True)
        for source in SOLUTIONS.glob("*.py"):
            if source.name != "make_public_fixtures.py":
                shutil.copy(source, folder / source.name)
        folders.append(folder)
    return folders


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=6, help="copies of the reference")
    parser.add_argument("--submissions", type=Path, help="a class folder to use instead")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--floor", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor is not None:
        print(json.dumps(run_floor(args.floor, args.device)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch:
        work = Path(scratch)
        if args.submissions:
            root = args.submissions.resolve()
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        else:
            root = work / "class"
            folders = make_class(root, args.count)
        count = len(folders)
        grade_command = [sys.executable, "-m", "grader", "grade", "--seed", str(SEED)]
        grade_command += ["--device", args.device, "--report", str(work / "alone.json")]
        grade = [timed([*grade_command, str(folder)]) for folder in folders]
        one_wall, one_steady = batch_seconds(root, work / "out-1", 1, args.device)
        two_wall, two_steady = batch_seconds(root, work / "out-2", 2, args.device)
        floor_run = subprocess.run(
            [sys.executable, __file__, "--device", args.device, "--floor", *map(str, folders)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        floor = statistics.fmean(json.loads(floor_run.stdout.splitlines()[-1]))
    alone = statistics.fmean(grade)
    print(
        f"{count} submissions, device {args.device}, {os.cpu_count()} cores; seconds per submission"
    )
    print(f"  grade alone (a process each):            {alone:6.2f}")
    print(f"  batch, 1 worker  (wall / submissions):   {one_wall:6.2f}   steady {one_steady:.2f}")
    print(f"  batch, 2 workers (wall / submissions):   {two_wall:6.2f}   steady {two_steady:.2f}")
    print(f"  floor (the tests' raw compute, no isolation): {floor:6.2f}")
    print("ratios")
    print(f"  grade alone / batch 1 worker:            {alone / one_wall:6.2f}x")
    print(f"  batch 1 worker steady / floor:           {one_steady / floor:6.2f}x  (target <= 1.3)")
    print(f"  batch 1 worker wall / floor:             {one_wall / floor:6.2f}x")
    print(
        f"  throughput 2 workers / 1 worker:         {one_wall / two_wall:6.2f}x  (target >= 1.7)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
