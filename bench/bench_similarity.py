"""What `batch`'s code similarity costs per 100 submissions.

    python bench/bench_similarity.py [--submissions 100]

Builds a class from the corpus (each tests/submissions/ case laid over the reference files,
as many rounds as needed, every other copy with its local names changed), then times
`class_similarity` on it: reading each submission as `grade` would, fingerprinting every
part file and comparing every pair within each part, and writing the side-by-side pages.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.assignment import load_assignment  # noqa: E402
from grader.batch.discovery import discover_submissions  # noqa: E402
from grader.similarity import class_similarity  # noqa: E402

CORPUS = ROOT / "tests" / "submissions"
SOLUTIONS = ROOT / "solutions" / "pytorch_basics"
RENAMES = (("loss", "objective"), ("grad", "gradient"), ("x", "inputs"))


def build_class(root: Path, count: int, files: tuple[str, ...]) -> None:
    cases = sorted(path for path in CORPUS.iterdir() if path.is_dir())
    for index in range(count):
        case = cases[index % len(cases)]
        folder = root / f"s{index:04d}"
        folder.mkdir(parents=True)
        for name in files:
            source = case / name if (case / name).is_file() else SOLUTIONS / name
            text = source.read_text(encoding="utf-8", errors="replace")
            if index % 2:
                for old, new in RENAMES:
                    text = text.replace(f" {old} ", f" {new} ")
            (folder / name).write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=100)
    args = parser.parse_args()
    assignment = load_assignment("pytorch_basics")
    base = Path(tempfile.mkdtemp(prefix="bench-similarity-"))
    try:
        build_class(base / "class", args.submissions, assignment.files)
        items = discover_submissions(base / "class", assignment)
        import copydetect  # noqa: F401  # its import (matplotlib) is timed apart

        cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.monotonic()
        result = class_similarity(items, assignment, base / "out")
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime + after.ru_stime) - (cpu.ru_utime + cpu.ru_stime)
        cpu_s += children.ru_utime + children.ru_stime
        pairs = len(items) * (len(items) - 1) // 2 * len(assignment.parts)
        print(
            f"{len(items)} submissions, {pairs} part pairs compared: {wall:.1f} s wall, "
            f"{cpu_s:.1f} s CPU; {len(result.pairs)} pairs listed; "
            f"per 100 submissions: {wall * 100 / len(items):.1f} s wall (pairs grow as n^2)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
