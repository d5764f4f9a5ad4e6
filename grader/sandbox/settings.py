"""What a sandbox is asked for (`SandboxSettings`), and how its protections are reported.

Shared by the commands that start a sandbox and those that only describe one (the notice
printed when protections were off), so that they need not import the client.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.assignment import Limits
from grader.errors import UsageError

# For the grader's own test suite: a shorter per-test time limit than the manifest's.
TIMEOUT_OVERRIDE_ENV = "GRADER_TEST_TIMEOUT_S"
PROTECTION_NAMES = {
    "landlock": "Landlock (only the system, Python and the job readable; no TCP)",
    "seccomp": "a seccomp filter (no ptrace, mount, namespaces, inet sockets, bpf, ...)",
    "separate_user": "a separate unprivileged user",
    "pid_namespace": "a process namespace (every student process dies with the job)",
    "network_isolated": "no network",
    "ipc_isolated": "private IPC",
    "read_only_filesystem": "a read-only file system",
    "private_proc": "a private /proc",
    "private_tmp": "private /tmp, /var/tmp and /dev/shm",
    "paths_hidden": "hidden solutions and results",
    "minimal_view": "a file system view of only the system, Python and the job",
}


@dataclass(frozen=True)
class SandboxSettings:
    limits: Limits
    device: str = "cpu"
    threads: int = 1
    # Paths student code must not see (solutions, results, Gradescope metadata).
    hide: tuple[Path, ...] = ()
    keep_jobs: bool = False


def limits_from_environment(limits: Limits) -> Limits:
    """`limits` with the per-test timeout from GRADER_TEST_TIMEOUT_S, when that is set, and
    the part budget its default (twice that) rather than one made for the manifest's."""
    text = os.environ.get(TIMEOUT_OVERRIDE_ENV, "").strip()
    if not text:
        return limits
    try:
        timeout = float(text)
    except ValueError:
        timeout = -1.0
    if not 0 < timeout <= 3600:
        raise UsageError(
            f"{TIMEOUT_OVERRIDE_ENV}={text!r}: give the per-test time limit in seconds (0-3600]."
        )
    return replace(limits, timeout_s=timeout, part_budget_s=None)


def protections_notice(sandbox: dict[str, Any]) -> str:
    """One line naming the protections that were off for student code, or "" if none were."""
    off = [PROTECTION_NAMES[name] for name in sandbox.get("off", ()) if name in PROTECTION_NAMES]
    if not off:
        return ""
    reason = "the grader is not running as root" if os.geteuid() != 0 else "this kernel refused"
    return f"note: student code ran without {'; '.join(off)} ({reason}; see docs/security.md)."
