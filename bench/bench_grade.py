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
import statistics
import subprocess
import sys
import time

import pytest
from floor import ROOT, SEED, SOLUTIONS, FloorPlugin, pytest_args


def run_floor(device: str) -> int:
    """The body of the floor process: import torch, run the suite in-process."""
    import torch

    if device == "cpu":
        torch.set_num_threads(1)
    return int(pytest.main(pytest_args(device), plugins=[FloorPlugin(SOLUTIONS, device)]))


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
