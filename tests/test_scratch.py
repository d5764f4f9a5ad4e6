"""Where grading keeps its short-lived files (grader/scratch.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from grader import scratch


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setattr(os, "geteuid", lambda: 0)


def test_root_uses_a_roomy_shared_memory_tmpfs(as_root: None) -> None:
    if not scratch._roomy_tmpfs(scratch.SHARED_MEMORY):
        pytest.skip("this machine's /dev/shm is not a tmpfs with 1 GiB free")
    assert scratch.scratch_root() == Path("/dev/shm")


def test_a_small_or_missing_tmpfs_is_not_used(
    as_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    system = Path(tempfile.gettempdir())
    monkeypatch.setattr(scratch, "MIN_FREE_BYTES", 1 << 62)  # more than any machine has
    assert scratch.scratch_root() == system
    monkeypatch.setattr(scratch, "MIN_FREE_BYTES", 1)
    monkeypatch.setattr(scratch, "SHARED_MEMORY", tmp_path / "absent")
    assert scratch.scratch_root() == system
    # A folder on a disk, however roomy, is no tmpfs.
    monkeypatch.setattr(scratch, "SHARED_MEMORY", tmp_path)
    assert scratch.scratch_root() == system


def test_without_root_student_code_could_write_there(
    as_root: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert scratch.scratch_root() == Path(tempfile.gettempdir())


def test_tmpdir_names_the_place(
    as_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert scratch.scratch_root() == tmp_path
