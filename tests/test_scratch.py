"""Where grading keeps its short-lived files (grader/sandbox/scratch.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.course.root import PACKAGE_ROOT
from grader.sandbox import scratch


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


def _folder_of_a_killed_process(root: Path) -> Path:
    """A scratch folder made in `root` by a process that was then killed with SIGKILL."""
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from grader.sandbox.scratch import scratch_folder\n"
        "with scratch_folder('grader-', Path(sys.argv[1])) as folder:\n"
        "    print(folder, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    folder = Path(child.stdout.strip())
    assert folder.parent == root and folder.is_dir()
    return folder


def test_a_new_folder_sweeps_those_no_living_process_owns(tmp_path: Path) -> None:
    abandoned = _folder_of_a_killed_process(tmp_path)
    (abandoned / "job").mkdir()
    # Not candidates: an older version's folder (no owner lock), another program's folder,
    # and a link named like a scratch folder (never followed).
    unlocked = tmp_path / "grader-older"
    unlocked.mkdir()
    # Made, its lock file created, but not locked yet: its owner is between two steps (a
    # sweep that took the lock here removed live folders, 21 in 4,000 with two makers).
    being_made = tmp_path / "grader-being-made"
    being_made.mkdir()
    (being_made / scratch.OWNER_LOCK).touch()
    other = tmp_path / "pytest-of-someone"
    other.mkdir()
    (tmp_path / "grader-link").symlink_to(other)
    with scratch.scratch_folder("grader-", tmp_path) as live:
        assert not abandoned.exists()
        # The live folder's owner holds its lock: another sweep leaves it alone.
        assert scratch.sweep_abandoned(tmp_path) == []
        assert live.is_dir()
    assert not live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "grader-being-made",
        "grader-link",
        "grader-older",
        "pytest-of-someone",
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_folder_that_gave_up_its_modes_is_removed_too() -> None:
    """Without root, student code runs as the grading user and can `chmod 000` a folder in
    its job's home: removal failed halfway, took the lock, and left the rest for good."""
    nobody = 65534
    base = Path(tempfile.mkdtemp(prefix="scratch-modes-"))  # pytest's own are root's, 0700
    base.chmod(0o755)
    root = base / "scratch"
    root.mkdir()
    os.chown(root, nobody, nobody)
    try:
        os.setegid(nobody)
        os.seteuid(nobody)  # the grading user, without root
        try:
            with scratch.scratch_folder("grader-", root) as folder:
                (folder / "job" / "home" / "trap" / "x").mkdir(parents=True)
                (folder / "job" / "home" / "trap").chmod(0)
        finally:
            os.seteuid(0)
            os.setegid(0)
        assert list(root.iterdir()) == []
    finally:
        for current, folders, _ in os.walk(base):
            for name in folders:
                os.chmod(os.path.join(current, name), 0o700)
        shutil.rmtree(base)
