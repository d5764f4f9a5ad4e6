"""The sandbox's own uid: claimed under a lock, and every process and file of it swept away.

When the grader runs as root, student code runs as a uid that no account or group uses and no
other live sandbox holds, so that killing "every process of that uid" (`kill_uid`, with
`kill(-1)` sent as that uid) and deleting "every file of that uid" (`remove_files_of`) reach
this sandbox's leftovers and nothing else, and RLIMIT_NPROC, which the kernel counts per uid,
is this sandbox's alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import logging
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# Student code runs as a uid from this range, unique per live sandbox (kept below 65536 so it
# also works inside user-namespaced containers, which often map only that many ids).
SANDBOX_UID_BASE = 40_000
SANDBOX_UID_SPAN = 20_000
# Where sandboxes hold a lock on the uid they use, so two never share one.
UID_LOCK_DIRS = (Path("/run/torch-grader"), Path(tempfile.gettempdir()) / "torch-grader-uids")


@dataclass(frozen=True)
class SandboxIdentity:
    """The uid and gid student code runs as, and the lock that keeps them ours."""

    uid: int
    gid: int
    lock_fd: int | None


def _lock_directory() -> Path | None:
    """A folder only we can write, for the uid locks; None if there is none."""
    for directory in UID_LOCK_DIRS:
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, exist_ok=True)
            info = directory.lstat()
            if (
                stat.S_ISDIR(info.st_mode)
                and info.st_uid == os.geteuid()
                and not info.st_mode & 0o022
            ):
                return directory
    return None


def _uid_is_free(uid: int) -> bool:
    """True if no account and no group has this id (its gid would grant that group's files)."""
    try:
        pwd.getpwuid(uid)
    except KeyError:
        try:
            grp.getgrgid(uid)
        except KeyError:
            return True
    return False


def claim_identity() -> SandboxIdentity | None:
    """A uid (and same-numbered gid) of this sandbox's own, or None when we cannot switch users.

    Each sandbox gets an id unused by any account or group, and holds a lock on it: the sweep
    that kills every process of that uid then cannot touch another grader's jobs on the same
    machine (batch workers, parallel test runs), and RLIMIT_NPROC, which the kernel counts
    per uid, is this sandbox's alone. A uid needs no passwd entry to be switched to.
    """
    if os.geteuid() != 0:
        return None
    lock_dir = _lock_directory()
    if lock_dir is None:
        log.warning("no private folder for sandbox uid locks; relying on pids being unique")
    for attempt in range(SANDBOX_UID_SPAN):
        uid = SANDBOX_UID_BASE + (os.getpid() + attempt) % SANDBOX_UID_SPAN
        if not _uid_is_free(uid):
            continue
        if lock_dir is None:
            return SandboxIdentity(uid, uid, None)
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.set_inheritable(fd, False)
        # Left over from a grader that was killed before it could sweep: not ours to keep.
        kill_uid(uid, uid)
        return SandboxIdentity(uid, uid, fd)
    log.warning("no free uid in %d..%d", SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_UID_SPAN)
    return None


def live_processes_of(uid: int) -> list[int]:
    """Pids whose real uid is `uid` and that have not yet exited (zombies are already dead)."""
    found = []
    for status_file in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status_file.read_text().splitlines() if ":" in line
            )
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                found.append(int(status_file.parent.name))
        except (OSError, KeyError, ValueError):
            continue
    return found


def kill_uid(uid: int, gid: int) -> list[int]:
    """Kill every process of `uid`; return those still alive after trying (should be none).

    `kill(-1)` sent *as* that uid reaches all of its processes at once, which a fork bomb
    cannot outrun the way it outruns a kill per pid.
    """
    kill = shutil.which("kill") or ""
    command = (
        [kill, "-KILL", "-1"]
        if kill
        else [sys.executable, "-I", "-S", "-c", "import os; os.kill(-1, 9)"]
    )
    for _ in range(5):
        alive = live_processes_of(uid)
        if not alive:
            return []
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                command,
                user=uid,
                group=gid,
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=False,
            )
        time.sleep(0.02)
    return live_processes_of(uid)


def remove_files_of(uid: int, roots: list[Path]) -> None:
    """Delete what `uid` left in world-writable folders (where there was no private /tmp).

    A file of that uid can only have been made in a folder it could write: a world-writable
    one, or one of its own, so only those are searched.
    """
    pending = [root for root in roots if root.is_dir() and not root.is_symlink()]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = Path(entry.path)
            if info.st_uid == uid:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        path.unlink()
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
                pending.append(path)
