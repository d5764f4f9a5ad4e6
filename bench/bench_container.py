"""Time grading in the Gradescope container at 0.5, 1 and 2 CPUs against the floor there.

The container is the image `make docker ASSIGNMENT=A` built, run as Gradescope runs it
(`--network none`, `--memory=768m`, no extra capabilities) with this checkout's autograder of
A mounted as its source (as `make docker-test DOCKER_TEST_ARGS=--no-build` does), so it times
the grader and the assignment as they are now. For each CPU limit it prints the median wall
time of

- grade: the reference graded through /autograder/run_autograder, as Gradescope runs it;
- floor: bench/bench_grade.py --floor in the same container, one process that imports torch
  and runs the hidden suite's raw compute for both sides, with no sandbox (pytorch_basics
  only, the suite bench/floor.py runs; "-" for other assignments);

and their ratio. Both include starting the container.

Usage: python bench/bench_container.py [-a ASSIGNMENT] [--repeats N] [--cpus 0.5 1 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docker"))

import container_test  # noqa: E402  (the container test's image and case helpers)

# The assignment whose hidden suite bench/floor.py runs in-process.
FLOOR_ASSIGNMENT = "pytorch_basics"
MEMORY = "768m"


def floor_seconds(tag: str, source: Path, cpus: str) -> float:
    command = [
        "docker", "run", "--rm", "--network", "none", f"--cpus={cpus}", f"--memory={MEMORY}",
        "-v", f"{source}:/autograder/source",
        "-v", f"{ROOT / 'bench'}:/autograder/source/bench:ro",
        tag, "/autograder/venv/bin/python", "/autograder/source/bench/bench_grade.py",
        "--floor", "--device", "cpu",
    ]  # fmt: skip
    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit(f"the floor failed in the container:\n{completed.stderr[-2000:]}")
    return float(seconds)


def grade_seconds(tag: str, source: Path, cpus: str, reference: container_test.Case) -> float:
    limits = [f"--cpus={cpus}", f"--memory={MEMORY}"]
    results, seconds = container_test.grade_in_container(tag, reference, limits, source)
    wrong = container_test.wrong_parts(reference, results)
    if wrong:
        raise SystemExit(f"the reference did not get full marks in the container: {wrong}")
    return float(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-a", "--assignment", default=FLOOR_ASSIGNMENT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpus", nargs="+", default=["0.5", "1", "2"])
    args = parser.parse_args()
    container_test.ensure_engine()
    tag = container_test.image_tag(args.assignment)
    source = container_test.source_for_built_image(args.assignment)
    with_floor = args.assignment == FLOOR_ASSIGNMENT
    with tempfile.TemporaryDirectory(prefix="bench-container-") as scratch:
        (reference,) = container_test.cases(args.assignment, Path(scratch), {"reference"})
        print(f"{args.assignment}: {args.repeats} runs each, medians, --memory={MEMORY}")
        print(f"{'cpus':>5} {'floor s':>8} {'grade s':>8} {'ratio':>6}")
        for cpus in args.cpus:
            floors, grades = [], []
            for _ in range(args.repeats):
                if with_floor:
                    floors.append(floor_seconds(tag, source, cpus))
                grades.append(grade_seconds(tag, source, cpus, reference))
            grade = statistics.median(grades)
            if floors:
                floor = statistics.median(floors)
                print(f"{cpus:>5} {floor:8.2f} {grade:8.2f} {grade / floor:5.2f}x", flush=True)
            else:
                print(f"{cpus:>5} {'-':>8} {grade:8.2f} {'-':>6}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
