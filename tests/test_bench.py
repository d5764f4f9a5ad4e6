"""Every benchmark in bench/ runs to its end at its smallest setting.

A benchmark that nobody runs rots: a renamed function or a changed command breaks it
silently until the next measurement. These runs check that each one still works and prints
its figures; they assert nothing about the figures (speed is for the benchmarks to report,
not for tests to judge).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.support import COURSE_ROOT

pytestmark = pytest.mark.slow

BENCH = COURSE_ROOT / "bench"
ASSIGNMENTS = sorted(path.parent.name for path in COURSE_ROOT.glob("assignments/*/assignment.toml"))
# The names bench/check_summary_html.py looks for.
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def run_bench(script: str, *args: str, timeout: float = 300) -> str:
    """Run bench/`script` as `make bench` does; its output, after checking it succeeded."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=COURSE_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.parametrize(
    ("script", "args", "figures"),
    [
        ("bench_grade.py", ("--repeats", "1"), "ratio grade / floor:"),
        ("bench_check.py", ("--repeats", "1"), "check on a correct kit: median"),
        ("bench_batch.py", ("--count", "6", "--alone", "1"), "batch one more submission / floor"),
        ("bench_similarity.py", ("--sizes", "8"), "planted copies found"),
    ],
)
def test_benchmark_runs(script: str, args: tuple[str, ...], figures: str) -> None:
    assert figures in run_bench(script, *args)


def _docker_answers() -> bool:
    try:
        info = ["docker", "info"]
        return subprocess.run(info, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_container_benchmark_runs(assignment: str) -> None:
    """The reference graded at full marks in the image of each assignment (the benchmark
    fails otherwise), its packages installed there by the zip's own setup.sh."""
    if not _docker_answers():
        pytest.skip("no Docker engine answers here")
    image = f"torch-grader-autograder:{assignment}"
    inspect = ["docker", "image", "inspect", image]
    if subprocess.run(inspect, capture_output=True, timeout=60).returncode != 0:
        pytest.skip(f"no image {image}: `make docker ASSIGNMENT={assignment}` builds it")
    output = run_bench(
        "bench_container.py", "-a", assignment, "--repeats", "1", "--cpus", "2", timeout=600
    )
    # The row of the one CPU limit: cpus, floor s (pytorch_basics only), grade s, ratio.
    floor, ratio = (r"[\d.]+", r"[\d.]+x") if assignment == "pytorch_basics" else ("-", "-")
    row = rf"^\s*2 +{floor} +[\d.]+ +{ratio}$"
    assert re.search(row, output, re.MULTILINE), output


def test_summary_page_browser_check_runs() -> None:
    if not any(shutil.which(name) for name in BROWSERS):
        pytest.skip("no Chromium here (apt-get install -y chromium)")
    assert "problems: none" in run_bench("check_summary_html.py")
