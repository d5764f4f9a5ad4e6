"""What `batch`'s code similarity costs per submission as the class grows, and that it finds
every planted copy.

    python bench/bench_similarity.py [--sizes 100 300 1000] [--seed 1]

For each size, builds a synthetic class of `pytorch_basics` submissions (each part file the
starter file's imports and docstring, then functions of generated code; now and then an idiom
that many students write alike, or the stub handed in unchanged) and plants copies: one
student's part file in another's submission with every name changed and the functions in
another order. Then times `class_similarity` in a fresh process, as `batch` runs it (reading
each submission as `grade` would, tokenising, indexing, comparing, writing the pages), and
again in another on the same out folder (a re-run, with the tokens kept). Prints CPU seconds per
submission for each size (the process and its bounded children; copydetect's import, once
per batch, is measured apart and left out), and exits 1 if a planted copy is not listed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.batch.discovery import discover_submissions  # noqa: E402
from grader.batch.similarity import class_similarity  # noqa: E402
from grader.course.manifest import Assignment, load_assignment  # noqa: E402

WORDS = (
    *("loss", "grad", "weight", "bias", "hidden", "out", "inputs", "target", "step", "rate"),
    *("total", "count", "batch", "scale", "value", "delta", "mask", "norm", "prob", "acc"),
    *("error", "score", "layer", "unit", "feature", "label", "sample", "mean"),
)
TORCH_CALLS = ("sum", "mean", "amax", "cumsum", "softmax", "log_softmax", "argmax", "std")
BUILTINS = ("len", "abs", "float", "int", "round", "min", "max")
OPERATORS = ("+", "-", "*", "/")
COMPARISONS = ("<", ">", "<=", ">=", "==")
# Functions many students write alike: each is in a share of the class (IDIOM_SHARES).
IDIOMS = (
    "def {f}({a}, {b}, {c}, {d}):\n    {b}.zero_grad()\n    {e} = {a}({c})\n"
    "    {g} = ((({e} - {d}) ** 2).mean())\n    {g}.backward()\n    {b}.step()\n"
    "    return {g}.item()\n",
    "def {f}({a}, {b}):\n    {a}.eval()\n    {c}, {d} = 0, 0\n    with torch.no_grad():\n"
    "        for {e}, {g} in {b}:\n"
    "            {c} += ({a}({e}).argmax(dim=1) == {g}).sum().item()\n"
    "            {d} += {g}.numel()\n    return {c} / {d}\n",
    "def {f}({a}):\n    return 1.0 / (1.0 + torch.exp(-{a}))\n\n\n"
    "def {b}({a}):\n    {c} = {f}({a})\n    return {c} * (1.0 - {c})\n",
    "def {f}({a}, {b}):\n    {c} = torch.zeros({a}.shape[0], {b})\n"
    "    {c}[torch.arange({a}.shape[0]), {a}] = 1.0\n    return {c}\n",
)
IDIOM_SHARES = (0.3, 0.3, 0.03, 0.03)
STUB_SHARE = 0.05
GENERATED_NAME = re.compile(r"\b[a-z]+_[0-9]+\b")


def starter_header(assignment: Assignment, file: str) -> str:
    """The starter file up to its first function or class: imports and docstring."""
    text = (assignment.directory / file).read_text(encoding="utf-8")
    match = re.search(r"^(def|class|@)", text, re.MULTILINE)
    return text[: match.start()] if match else text


def name(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.randrange(1000)}"


def statement(rng: random.Random, names: list[str]) -> str:
    a, b, c = rng.sample(names, 3)
    op, op2 = rng.choice(OPERATORS), rng.choice(OPERATORS)
    number = f"{rng.uniform(0, 10):.{rng.randint(1, 3)}f}"
    kind = rng.randrange(7)
    if kind == 0:
        return f"    {a} = {b} {op} {number} {op2} {c}"
    if kind == 1:
        return f"    {a} = {rng.choice(BUILTINS)}({b}) {op} {rng.randint(2, 999)}"
    if kind == 2:
        return f"    if {a} {rng.choice(COMPARISONS)} {number}:\n        {b} = {c} {op} {a}"
    if kind == 3:
        return f"    for {a} in range({rng.randint(2, 99)}):\n        {b} = {b} {op} {a} * {number}"
    if kind == 4:
        call = rng.choice(TORCH_CALLS)
        return f"    {a} = torch.{call}({b}, dim={rng.randint(0, 3)}) {op} {number}"
    if kind == 5:
        return f"    {a} = [{b} {op} {rng.randint(1, 99)} for {c} in range({rng.randint(2, 64)})]"
    return f"    {a}, {b} = {b} {op} {c}, {a} {op2} {number}"


def function(rng: random.Random) -> str:
    params = [name(rng) for _ in range(rng.randint(1, 3))]
    names = params + [name(rng) for _ in range(4)]
    body = [statement(rng, names) for _ in range(rng.randint(5, 9))]
    doc = f'    """{rng.choice(WORDS)} from {rng.choice(WORDS)}."""'
    return (
        f"def {name(rng)}({', '.join(params)}):\n{doc}\n"
        + "\n".join(body)
        + f"\n    return {names[-1]}\n"
    )


def honest_file(rng: random.Random, header: str, starter: str) -> str:
    if rng.random() < STUB_SHARE:
        return starter
    blocks = [function(rng) for _ in range(rng.randint(3, 5))]
    for idiom, share in zip(IDIOMS, IDIOM_SHARES, strict=True):
        if rng.random() < share:
            blocks.append(idiom.format(**{k: name(rng) for k in "abcdefg"}))
    rng.shuffle(blocks)
    return header + "\n\n" + "\n\n".join(blocks)


def disguised(rng: random.Random, text: str, header: str) -> str:
    """`text` with every generated name changed and its functions in another order."""
    renamed: dict[str, str] = {}
    text = GENERATED_NAME.sub(lambda m: renamed.setdefault(m.group(), f"my_{name(rng)}"), text)
    body = text[len(header) :]
    blocks = [block.strip("\n") for block in re.split(r"\n(?=def )", body) if block.strip()]
    order = blocks[:]
    while len(blocks) > 1 and order == blocks:
        rng.shuffle(order)
    return header + "\n\n" + "\n\n\n".join(order) + "\n"


def build_class(
    root: Path, count: int, assignment: Assignment, seed: int
) -> set[tuple[str, str, str]]:
    """Write `count` submissions under `root`; the planted (part, first, second) pairs."""
    rng = random.Random(seed)
    parts = assignment.parts
    headers = {part.id: starter_header(assignment, part.file) for part in parts}
    starters = {
        part.id: (assignment.directory / part.file).read_text(encoding="utf-8") for part in parts
    }
    keys = [f"s{index:04d}" for index in range(count)]
    files = {
        key: {part.id: honest_file(rng, headers[part.id], starters[part.id]) for part in parts}
        for key in keys
    }
    planted: set[tuple[str, str, str]] = set()
    shuffled = keys[:]
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    for source, copier in list(zip(shuffled[:half], shuffled[half:], strict=False))[
        : max(3, count // 20)
    ]:
        part = rng.choice(parts)
        if files[source][part.id] == starters[part.id]:
            continue
        files[copier][part.id] = disguised(rng, files[source][part.id], headers[part.id])
        first, second = sorted((source, copier))
        planted.add((part.id, first, second))
    for key in keys:
        folder = root / key
        folder.mkdir(parents=True)
        for part in parts:
            (folder / part.file).write_text(files[key][part.id], encoding="utf-8")
    return planted


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(base: Path) -> dict[str, Any]:
    """`class_similarity` over the class under `base`, timed in this (fresh) process."""
    assignment = load_assignment("pytorch_basics")
    items = discover_submissions(base / "class", assignment)
    cpu, started = cpu_seconds(), time.monotonic()
    result = class_similarity(items, assignment, base / "out")
    return {
        "cpu": cpu_seconds() - cpu,
        "wall": time.monotonic() - started,
        "pairs": [[pair.part, pair.first, pair.second] for pair in result.pairs],
    }


def measured(base: Path) -> dict[str, Any]:
    process = subprocess.run(
        [sys.executable, __file__, "--measure", str(base)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(process.stdout.splitlines()[-1])
    return figures


def import_cpu_seconds() -> float:
    """CPU seconds of `import copydetect` (matplotlib) in a fresh process."""
    code = (
        "import resource; r = resource.getrusage(resource.RUSAGE_SELF); import copydetect; "
        "s = resource.getrusage(resource.RUSAGE_SELF); "
        "print(s.ru_utime + s.ru_stime - r.ru_utime - r.ru_stime)"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(process.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # one run, here
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    assignment = load_assignment("pytorch_basics")
    imported = import_cpu_seconds()
    print(f"copydetect's import (matplotlib), once per batch: {imported:.1f} CPU-s, left out below")
    per_submission: dict[int, float] = {}
    failed = False
    for size in args.sizes:
        base = Path(tempfile.mkdtemp(prefix="bench-similarity-"))
        try:
            planted = build_class(base / "class", size, assignment, args.seed + size)
            first, rerun = measured(base), measured(base)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        listed = {tuple(pair) for pair in first["pairs"]}
        # copydetect hashes with Python's salted string hash, so a pair near 50% may be listed
        # in one process and not the next; a planted copy must be listed in both.
        missed = sorted(planted - listed | planted - {tuple(pair) for pair in rerun["pairs"]})
        failed = failed or bool(missed)
        cpu = first["cpu"] - imported
        per_submission[size] = cpu / size
        print(
            f"{size} submissions: {cpu:.1f} CPU-s ({cpu / size * 1000:.1f} ms per submission), "
            f"{first['wall']:.1f} s wall; {len(listed)} pairs listed, "
            f"{len(planted) - len(missed)} of {len(planted)} planted copies found; "
            f"re-run with the tokens kept: {rerun['cpu'] - imported:.1f} CPU-s "
            f"({(rerun['cpu'] - imported) / size * 1000:.1f} ms per submission), "
            f"{rerun['wall']:.1f} s wall"
        )
        for part, one, two in missed:
            print(f"  MISSED: {part}: {one} and {two}")
    if len(per_submission) > 1:
        low, high = min(per_submission), max(per_submission)
        print(
            f"CPU per submission, {high} against {low} submissions: "
            f"{per_submission[high] / per_submission[low]:.2f}x"
        )
    if failed:
        print("FAILED: a planted copy was not listed")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
