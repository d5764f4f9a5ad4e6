"""Helpers and constants shared by the grader's own tests (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grader.intake.integrity import reaching_uses

COURSE_ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT_DIR = COURSE_ROOT / "assignments" / "pytorch_basics"
SOLUTIONS_DIR = COURSE_ROOT / "solutions" / "pytorch_basics"
PART_FILES = (
    "manual_backprop.py",
    "autograd_loop.py",
    "custom_sigmoid.py",
    "two_layer_net.py",
    "dataloader_training.py",
    "device_benchmark.py",
)


# A case's code run so that the harness's integrity rule (grader/intake/integrity.py), which reads
# source, does not see it: `compile` and `exec` reached through a method's own `self` (which
# the rule allows, for an nn.Module's layers) called unbound on the builtins module, the
# source registered with linecache so that `inspect` still finds it. Cases whose attack the
# rule would refuse at intake use it, so that the defences behind the rule (servers per part,
# probes out of sys.modules, run-time checks, result decoding) are what they meet. Only files
# the rule refuses are run so: the imports of code run from a string are not seen, so a job
# could not import the submission files they name.
EVADING_WRAPPER = """
import linecache as _linecache


class _Reach:
    def get(self, name):
        return getattr(self, name)


_hostile_source = {source!r}
_hostile_name = "<hostile {name}>"
_linecache.cache[_hostile_name] = (
    len(_hostile_source), None, _hostile_source.splitlines(True), _hostile_name
)
_hostile_builtins = _Reach.get(print, "".join(("__se", "lf__")))
_Reach.get(_hostile_builtins, "ex" + "ec")(
    _Reach.get(_hostile_builtins, "comp" + "ile")(_hostile_source, _hostile_name, "exec")
)
"""


def refused_by_the_integrity_rule(text: str) -> bool:
    """Whether the harness's integrity rule refuses `text` on its own."""
    try:
        code = compile(text, "case", "exec", dont_inherit=True)
        return bool(reaching_uses(text, code).refused)
    except SyntaxError:
        return False


def evading_the_integrity_rule(source: str, name: str) -> str:
    """`source` as code that runs it past the integrity rule (`EVADING_WRAPPER`)."""
    return EVADING_WRAPPER.format(source=source, name=name)


def run_grader_cli(
    *args: str | Path,
    cwd: Path = COURSE_ROOT,
    timeout: float = 600,
    environment: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m grader ...` as a user would, from `cwd`.

    `environment`: a copy of os.environ taken in pytest's thread, for a call from another
    thread (pytest sets and unsets its variables meanwhile, and reading os.environ then fails).
    """
    return _python_m_grader(args, cwd, timeout, pythonpath=COURSE_ROOT, environment=environment)


def _python_m_grader(
    args: tuple[str | Path, ...],
    cwd: Path,
    timeout: float,
    *,
    pythonpath: Path | None,
    extra_env: dict[str, str] | None = None,
    environment: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m grader ARGS` with pytest's variables and PYTHONPATH taken from the environment."""
    source = os.environ.copy() if environment is None else environment
    env = {k: v for k, v in source.items() if not k.startswith("PYTEST") and k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def copy_part_files(source: Path, folder: Path) -> Path:
    """A new student folder holding `source`'s six part files."""
    folder.mkdir()
    for name in PART_FILES:
        shutil.copy(source / name, folder / name)
    return folder


def grade_to_report(
    submission: Path, tmp_path: Path, *extra: str, environment: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any]]:
    """Grade through the CLI; return the process, report.json and results.json.

    `environment`: as for `run_grader_cli`, when called from another thread.
    """
    report, results = tmp_path / "report.json", tmp_path / "results.json"
    process = run_grader_cli(
        "grade", submission, "--seed", "12345", "--report", report, "--results", results, *extra,
        environment=environment,
    )  # fmt: skip
    return process, json.loads(report.read_text()), json.loads(results.read_text())


@dataclass(frozen=True)
class Graded:
    """One corpus entry: the `batch` process that graded it, and its report."""

    process: subprocess.CompletedProcess[str]
    report: dict[str, Any]


@dataclass(frozen=True)
class GradedClass:
    """One `batch` run over a folder of submissions: the process and each entry's report."""

    process: subprocess.CompletedProcess[str]
    reports: dict[str, dict[str, Any]]

    def entry(self, name: str) -> Graded:
        assert name in self.reports, self.process.stderr[-3000:]
        return Graded(self.process, self.reports[name])


# One more batch worker than cores: a case that waits for its time limit leaves a core idle.
CORPUS_WORKERS = (os.cpu_count() or 2) + 1


@contextmanager
def corpus_graded_in_background(
    entries: Iterable[str], assemble: Callable[[str, Path], object], work: Path, assignment: str
) -> Iterator[Future[GradedClass]]:
    """Assemble each entry under `work`/class, then grade them all by one `batch` run in a
    background thread (on CPU, which the corpora's expectations describe)."""
    for name in entries:
        assemble(name, work / "class" / name)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch") as pool:
        future = pool.submit(
            batch_grade,
            work / "class",
            assignment,
            work / "out",
            workers=CORPUS_WORKERS,
            environment=os.environ.copy(),
        )
        yield future
        future.cancel()


def batch_grade(
    submissions: Path,
    assignment: str,
    out: Path,
    *,
    workers: int,
    environment: dict[str, str] | None = None,
) -> GradedClass:
    """Grade every entry of `submissions` in one `batch` run, as staff grade a class.

    Workers keep torch, the sandbox's zygote and the reference's outputs warm from one
    submission to the next, so a corpus costs a fraction of one `grade` run per case. Each
    report is keyed by its entry's name (the corpus names are already valid keys).
    """
    process = run_grader_cli(
        "batch", submissions, "-a", assignment, "--seed", "12345", "--device", "cpu",
        "--out", out, "--no-similarity", "--workers", str(workers), timeout=1800,
        environment=environment,
    )  # fmt: skip
    reports = {
        path.parent.name: json.loads(path.read_text(encoding="utf-8"))
        for path in (out / "reports").glob("*/report.json")
    }
    return GradedClass(process, reports)


# The corpus modules' two tests that need the reference or the stubs graded, by entry name.
REFERENCE_AND_STUBS = {
    "test_reference_scores_full_marks": "reference",
    "test_stubs_score_zero_everywhere": "stubs",
}


def corpus_entries_needed(items: list[pytest.Item], module_name: str) -> list[str]:
    """Which entries (a `case` parameter, the reference, the stubs) the selected tests of
    module `module_name` need graded."""
    names: set[str] = set()
    for item in items:
        if not isinstance(item, pytest.Function) or item.module.__name__ != module_name:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "case" in callspec.params:
            names.add(str(callspec.params["case"]))
        elif item.originalname in REFERENCE_AND_STUBS:
            names.add(REFERENCE_AND_STUBS[item.originalname])
    return sorted(names)


def part_scores(report: dict[str, Any]) -> dict[str, float]:
    return {part: entry["score"] for part, entry in report["parts"].items()}


def copy_starter_kit(destination: Path) -> Path:
    """Copy grader/ and pytorch_basics (never solutions/) as a student's starter kit."""
    ignore = shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*_submission.zip", ".ipynb_checkpoints"
    )
    for name in ("grader", "assignments/pytorch_basics"):
        shutil.copytree(COURSE_ROOT / name, destination / name, ignore=ignore)
    return destination


def run_kit_cli(
    *args: str | Path, cwd: Path, pythonpath: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m grader ...` in a starter kit as a student would: no PYTHONPATH to the repo."""
    # rich wraps at the terminal width; a fixed one keeps lines comparable.
    return _python_m_grader(args, cwd, timeout, pythonpath=pythonpath, extra_env={"COLUMNS": "100"})


def notebook_with_part_code(notebook: Path, codes: dict[str, str], out: Path) -> Path:
    """Write a copy of `notebook` whose marked cell of each part in `codes` holds that code."""
    import nbformat

    content = nbformat.read(notebook, as_version=4)
    for cell in content.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            part_id = tag.removeprefix("part:")
            if tag.startswith("part:") and part_id in codes:
                cell.source = f"# part: {part_id}\n{codes[part_id]}"
    nbformat.write(content, out)
    return out
