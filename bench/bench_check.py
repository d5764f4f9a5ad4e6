"""Time `python -m grader check` on a full, correct starter kit, as a student runs it.

Builds a temporary kit as `build` ships it (grader/ and the one assignment's folder, with
the reference files copied over the stubs), runs `check` from the kit's folder with no
PYTHONPATH, and prints the median wall time of N runs. Each run starts cold: a fresh
interpreter, so torch is imported every time.

Usage: python bench/bench_check.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "pytorch_basics"
ASSIGNMENT = Path("assignments") / "pytorch_basics"


def build_correct_kit(destination: Path) -> Path:
    """A starter kit whose part files are the reference solutions.

    Only the one assignment, as in the kit `build` writes: with several, `check` would ask
    which one to check.
    """
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*_submission.zip")
    for name in (Path("grader"), ASSIGNMENT):
        shutil.copytree(ROOT / name, destination / name, ignore=ignore)
    for part_file in (ROOT / ASSIGNMENT).glob("*.py"):
        reference = SOLUTIONS / part_file.name
        if reference.is_file():
            shutil.copy(reference, destination / ASSIGNMENT / part_file.name)
    return destination


def time_check(kit: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `python -m grader check`; fails unless every test passes.

    CPU time (user + system, of `check` and the pytest process it starts) does not grow
    when other work shares the machine, so it tells a slow run from a busy machine.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-m", "grader", "check"],
        cwd=kit,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"check failed on the reference kit:\n{process.stdout}{process.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3, help="runs to take the median of")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-check-") as temporary:
        kit = build_correct_kit(Path(temporary) / "kit")
        measured = [time_check(kit) for _ in range(args.repeats)]
    walls = [wall for wall, _ in measured]
    runs = ", ".join(f"{wall:.2f}" for wall in walls)
    print(
        f"check on a correct kit: median {statistics.median(walls):.2f} s wall "
        f"({runs}), {statistics.median(cpu for _, cpu in measured):.2f} s CPU, "
        f"over {args.repeats} runs on {os.cpu_count()} CPUs "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
