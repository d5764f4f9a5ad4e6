"""Shared fixtures for the grader's own tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def run_grader_cli(
    *args: str | Path, cwd: Path = COURSE_ROOT, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run `python -m grader ...` as a user would, from `cwd`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(COURSE_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def grader_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_grader_cli


def copy_part_files(source: Path, folder: Path) -> Path:
    """A new student folder holding `source`'s six part files."""
    folder.mkdir()
    for name in PART_FILES:
        shutil.copy(source / name, folder / name)
    return folder


@pytest.fixture
def reference_copy(tmp_path: Path) -> Path:
    """A fresh copy of the reference solution's part files, as a student folder."""
    return copy_part_files(SOLUTIONS_DIR, tmp_path / "reference-submission")


@pytest.fixture
def stub_copy(tmp_path: Path) -> Path:
    """A fresh copy of the untouched stubs, as a student folder."""
    return copy_part_files(ASSIGNMENT_DIR, tmp_path / "stub-submission")


def grade_to_report(
    submission: Path, tmp_path: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any]]:
    """Grade through the CLI; return the process, report.json and results.json."""
    report, results = tmp_path / "report.json", tmp_path / "results.json"
    process = run_grader_cli(
        "grade", submission, "--seed", "12345", "--report", report, "--results", results, *extra
    )
    return process, json.loads(report.read_text()), json.loads(results.read_text())


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


@pytest.fixture
def starter_kit(tmp_path: Path) -> Path:
    """A fresh starter kit in tmp_path/kit, holding the untouched stubs."""
    return copy_starter_kit(tmp_path / "kit")


def run_kit_cli(
    *args: str | Path, cwd: Path, pythonpath: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m grader ...` in a starter kit as a student would: no PYTHONPATH to the repo."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST") and k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env["COLUMNS"] = "100"  # rich wraps at the terminal width; keep lines comparable
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


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
