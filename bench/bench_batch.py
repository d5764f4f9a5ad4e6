"""Seconds per submission: `grade` alone, inside `batch` with 1 and 2 workers, and the floor.

All on the same submissions (copies of the reference solution unless --submissions names a
class folder), with the same seed, in one run; wall time and CPU time (every process of the
command, sandbox children included), since a shared machine skews only the first:

- grade alone: one `python -m grader grade` per submission, for the first --alone of them
  (a Python start, `import torch` and a fork server's start each time);
- batch, 1 and 2 workers: `python -m grader batch --force --no-similarity` over all of them,
  divided by the number of submissions; and what one more submission costs once the workers
  run (a batch of two submissions per worker subtracted, which removes the workers' start and
  the once-per-worker collapse of its memory before its second submission);
- the floor: the raw compute of the tests, with torch imported once and every hidden probe
  run in one process against the reference and against the submission, no isolation.

Code similarity is left out of the batches: copies of one submission make every pair of the
class a match to compare and page, a cost no class has; `bench_similarity.py` measures it on
synthetic classes (about 56 CPU-ms a submission).

Targets: one more submission in a batch <= 1.5x the floor; 2 workers >= 1.7x the
throughput of 1 (on 2 cores), compared once the workers run (steady state) and all in.

Usage: python bench/bench_batch.py [--count N] [--alone N] [--submissions DIR] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from floor import ROOT, SEED, SOLUTIONS, FloorPlugin, pytest_args


@dataclass(frozen=True)
class Cost:
    """Wall seconds and CPU seconds (every process involved, children included)."""

    wall: float
    cpu: float

    def per(self, count: int) -> Cost:
        return Cost(self.wall / count, self.cpu / count)

    def __sub__(self, other: Cost) -> Cost:
        return Cost(self.wall - other.wall, self.cpu - other.cpu)


def run_floor(submissions: list[Path], device: str) -> list[tuple[float, float]]:
    """(wall, CPU) seconds per submission of the suite run in-process, torch imported once."""
    import torch

    torch.set_num_threads(1)
    args = pytest_args(device)
    # One untimed run first: the first optimizer step, gradcheck and collection pay lazy
    # imports once per process, which a warm worker has paid too.
    pytest.main(args, plugins=[FloorPlugin(submissions[0], device)])
    costs = []
    for folder in submissions:
        wall, cpu = time.perf_counter(), time.process_time()
        exit_code = pytest.main(args, plugins=[FloorPlugin(folder, device)])
        costs.append((time.perf_counter() - wall, time.process_time() - cpu))
        if exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            raise SystemExit(f"the floor's pytest run on {folder} failed: exit code {exit_code}")
    return costs


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> Cost:
    """Run `command`; its CPU time counts every descendant that was waited for (all are)."""
    wall, cpu = time.perf_counter(), _children_cpu()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    cost = Cost(time.perf_counter() - wall, _children_cpu() - cpu)
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}")
    return cost


def run_batch(root: Path, out: Path, workers: int, device: str) -> tuple[Cost, float]:
    """The batch's whole cost, and the mean `duration_s` of its reports (a warm worker's)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "grader", "batch", str(root), "--out", str(out)]
    command += ["--workers", str(workers), "--seed", str(SEED), "--device", device, "--force"]
    command += ["--no-similarity"]
    cost = timed(command)
    reports = out.glob("reports/*/report.json")
    durations = [float(json.loads(path.read_text())["duration_s"]) for path in reports]
    return cost, statistics.fmean(durations)


def make_class(root: Path, count: int) -> list[Path]:
    folders = []
    for index in range(count):
        folder = root / f"student-{index:02d}"
        folder.mkdir(parents=True)
        for source in SOLUTIONS.glob("*.py"):
            shutil.copy(source, folder / source.name)
        folders.append(folder)
    return folders


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="copies of the reference")
    parser.add_argument(
        "--alone", type=int, default=5, help="how many of them to grade alone too (slow)"
    )
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
        if count < 6:
            raise SystemExit("the benchmark needs at least 6 submissions")
        # Two submissions per worker: what starting the workers costs, to subtract.
        start_one, start_two = work / "start-1", work / "start-2"
        for index, folder in enumerate(folders[:4]):
            if index < 2:
                shutil.copytree(folder, start_one / folder.name)
            shutil.copytree(folder, start_two / folder.name)
        grade_command = [sys.executable, "-m", "grader", "grade", "--seed", str(SEED)]
        grade_command += ["--device", args.device, "--report", str(work / "alone.json")]
        alone = [timed([*grade_command, str(folder)]) for folder in folders[: args.alone]]
        one, one_steady = run_batch(root, work / "out-1", 1, args.device)
        two, _ = run_batch(root, work / "out-2", 2, args.device)
        startup, _ = run_batch(start_one, work / "out-start-1", 1, args.device)
        startup_two, _ = run_batch(start_two, work / "out-start-2", 2, args.device)
        floor_run = subprocess.run(
            [sys.executable, __file__, "--device", args.device, "--floor", *map(str, folders)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        floors = json.loads(floor_run.stdout.splitlines()[-1])
    grade = Cost(statistics.fmean(c.wall for c in alone), statistics.fmean(c.cpu for c in alone))
    floor = Cost(statistics.fmean(w for w, _ in floors), statistics.fmean(c for _, c in floors))
    # What one more submission costs a batch: the start of the workers subtracted.
    marginal = (one - startup).per(count - 2)
    marginal_two = (two - startup_two).per(count - 4)
    rows = [
        ("grade alone (a process each)", grade),
        ("batch, 1 worker (all / submissions)", one.per(count)),
        ("batch, 1 worker, one more submission", marginal),
        ("batch, 2 workers (all / submissions)", two.per(count)),
        ("batch, 2 workers, one more submission", marginal_two),
        ("floor: the tests' raw compute", floor),
    ]
    print(f"{count} submissions, device {args.device}, {os.cpu_count()} cores")
    print(f"{'seconds per submission':42} {'wall':>7} {'CPU':>7}")
    for label, cost in rows:
        print(f"  {label:40} {cost.wall:7.2f} {cost.cpu:7.2f}")
    print(f"  {'(mean duration_s in the 1-worker reports)':40} {one_steady:7.2f}")
    print("ratios")
    print(f"  grade alone / batch 1 worker (wall):        {grade.wall / one.per(count).wall:5.2f}x")
    print(
        f"  batch one more submission / floor (CPU):    {marginal.cpu / floor.cpu:5.2f}x"
        "  (target <= 1.5)"
    )
    print(f"  batch one more submission / floor (wall):   {marginal.wall / floor.wall:5.2f}x")
    print(
        f"  throughput 2 workers / 1 worker (steady):   {marginal.wall / marginal_two.wall:5.2f}x"
        "  (target >= 1.7)"
    )
    print(f"  throughput 2 workers / 1 worker (all in):   {one.wall / two.wall:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
