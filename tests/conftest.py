"""Fixtures and plugins for the grader's own tests; shared helpers live in tests/support.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import (
    ASSIGNMENT_DIR,
    SOLUTIONS_DIR,
    copy_part_files,
    copy_starter_kit,
    run_grader_cli,
)

# One intra-op thread in every process the tests start, as in grading: the test workers
# already fill the cores, and torch's default of a thread per core makes OpenMP threads spin
# against each other (a 48M-value fingerprint took 85 s beside the suite, 8 s alone).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# tests/test_plugin.py runs small hidden suites through the grader's plugin in-process.
pytest_plugins = ["pytester"]


@pytest.fixture
def grader_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_grader_cli


@pytest.fixture
def reference_copy(tmp_path: Path) -> Path:
    """A fresh copy of the reference solution's part files, as a student folder."""
    return copy_part_files(SOLUTIONS_DIR, tmp_path / "reference-submission")


@pytest.fixture
def stub_copy(tmp_path: Path) -> Path:
    """A fresh copy of the untouched stubs, as a student folder."""
    return copy_part_files(ASSIGNMENT_DIR, tmp_path / "stub-submission")


@pytest.fixture
def starter_kit(tmp_path: Path) -> Path:
    """A fresh starter kit in tmp_path/kit, holding the untouched stubs."""
    return copy_starter_kit(tmp_path / "kit")
