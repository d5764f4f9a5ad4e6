"""Where grading keeps its short-lived files: job inputs and results, submission copies.

A grade creates and removes some 400 files and folders per submission (a job folder, its
input, its result, error, progress and output files for each of about 54 tests). On a disk
file system each creation allocates an inode, and on ext4 without a journal (these
development machines) finding a free one skips every inode freed in the last 30 seconds,
one buffer lookup each: under this churn a creation cost 0.3 ms, and the part servers spent
a fifth of their CPU creating job files (`perf record` of a batch: 42.6 ms a server, 35.7 on
a tmpfs, about 75 ms a submission in all). On a tmpfs creating a file is a memory
allocation.

So grading uses /dev/shm where that is safe and roomy: as root, student code runs as a uid
of its own, to which the scratch folders (root's, mode 0711 and 0750) give no write and no
listing, whatever the sandbox's Landlock rules let it write (they include /dev/shm, for
DataLoader workers' shared memory). Without root, student code runs as the grading user and
could write there, so the system's temporary folder is used, as it is where /dev/shm is
small (Docker's default is 64 MiB) or absent, and wherever TMPDIR says otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

SHARED_MEMORY = Path("/dev/shm")
# Every scratch folder's name starts so (grade's "grader-", batch's "grader-batch-").
SCRATCH_PREFIX = "grader-"
# Room for what a batch holds there at once: each worker's current job (a result file is
# capped at the sandbox's max_file_mb, 64 MiB) and submission copies, many times over.
MIN_FREE_BYTES = 1 << 30


def scratch_root() -> Path:
    """The folder to make grading's temporary folders in (see the module's docstring)."""
    system = Path(tempfile.gettempdir())
    if os.environ.get("TMPDIR") or os.geteuid() != 0:
        return system
    return SHARED_MEMORY if _roomy_tmpfs(SHARED_MEMORY) else system


def _roomy_tmpfs(path: Path) -> bool:
    """Whether `path` is a tmpfs mount point with at least MIN_FREE_BYTES free."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            kinds = {fields[1]: fields[2] for fields in map(str.split, mounts) if len(fields) > 2}
        stats = os.statvfs(path)
    except OSError:
        return False
    return kinds.get(str(path)) == "tmpfs" and stats.f_bavail * stats.f_frsize >= MIN_FREE_BYTES


# Held, with an exclusive flock, by the process that made a scratch folder and by every process
# it forks, for as long as any of them lives. Its owner writes its pid into it once it holds
# the lock: a folder whose lock can be taken and that says whose it was has no owner left (an
# empty one may be between its creation and its lock).
OWNER_LOCK = ".owner"


@contextlib.contextmanager
def scratch_folder(prefix: str, root: Path | None = None) -> Iterator[Path]:
    """A new folder in `root` (default `scratch_root()`), removed when the block ends.

    A grade killed with SIGKILL cannot remove its folder, and on /dev/shm what it leaves
    takes memory until the next reboot; so each new folder first sweeps the folders of its
    root that no living process owns (see OWNER_LOCK).
    """
    root = root or scratch_root()
    sweep_abandoned(root)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    # Traversable, not listable: the sandbox users reach their own job folders through it.
    folder.chmod(0o711)
    owner = os.open(folder / OWNER_LOCK, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)
        os.write(owner, f"{os.getpid()}\n".encode())
        yield folder
    finally:
        remove_tree(folder)
        os.close(owner)


def sweep_abandoned(root: Path) -> list[Path]:
    """Remove the scratch folders in `root` that no living process owns; returns them.

    Only this user's `grader-*` folders holding an owner lock are candidates: a folder made
    by an older version, or one whose owner is still taking its lock, is left alone.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        if not _is_own_scratch(entry):
            continue
        try:
            lock = os.open(
                Path(entry.path) / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            )
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(lock).st_size == 0:
                continue  # its owner has not locked it yet
        except OSError:
            continue  # held: its grade is still running
        else:
            remove_tree(Path(entry.path))
            removed.append(Path(entry.path))
        finally:
            os.close(lock)
    return removed


def remove_tree(folder: Path) -> None:
    """Remove `folder`, its owner lock last, also where a folder inside gave up its modes.

    Without root, student code runs as the grading user and can `chmod 000` a folder in its
    job's home: the removal then failed halfway, and once the lock was gone no sweep would
    ever take the rest. So every folder is made searchable again before anything is removed.
    """
    for current, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(current, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    try:
        children = [child for child in folder.iterdir() if child.name != OWNER_LOCK]
    except OSError:
        children = []
    for child in children:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()
    shutil.rmtree(folder, ignore_errors=True)


def _is_own_scratch(entry: os.DirEntry[str]) -> bool:
    try:
        return (
            entry.name.startswith(SCRATCH_PREFIX)
            and entry.is_dir(follow_symlinks=False)
            and entry.stat(follow_symlinks=False).st_uid == os.geteuid()
        )
    except OSError:
        return False
