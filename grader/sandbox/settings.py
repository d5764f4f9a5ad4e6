"""What a sandbox is asked for (`SandboxSettings`), and how its protections are reported.

Shared by the commands that start a sandbox and those that only describe one (the notice
printed when protections were off), so that they need not import the client.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.course.manifest import Limits
from grader.errors import UsageError

# For the grader's own test suite: a shorter per-test time limit than the manifest's.
TIMEOUT_OVERRIDE_ENV = "GRADER_TEST_TIMEOUT_S"
# Likewise each part's time budget (`Limits.part_budget`).
BUDGET_OVERRIDE_ENV = "GRADER_TEST_PART_BUDGET_S"
# Both sides run torch's deterministic algorithms where it has them; on CUDA, cuBLAS's
# matmuls are deterministic only with this workspace, read when cuBLAS starts (the
# environment of the trusted process and of every sandbox job).
CUBLAS_WORKSPACE = ("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
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
    """`limits` with the per-test time limit from GRADER_TEST_TIMEOUT_S and the part budget
    from GRADER_TEST_PART_BUDGET_S, each where it is set. A lowered test limit leaves the
    manifest's budget as it was: a busy test run needs it, whatever its tests' limit."""
    timeout = _seconds_from_environment(TIMEOUT_OVERRIDE_ENV, "the per-test time limit")
    budget = _seconds_from_environment(BUDGET_OVERRIDE_ENV, "each part's time budget")
    return replace(
        limits,
        timeout_s=limits.timeout_s if timeout is None else timeout,
        part_budget_s=limits.part_budget if budget is None else budget,
    )


def _seconds_from_environment(name: str, what: str) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise UsageError(f"{name}={text!r}: give {what} in seconds (0-3600].")
    return seconds


def protections_notice(sandbox: dict[str, Any]) -> str:
    """One line naming the protections that were off for student code, or "" if none were."""
    off = [PROTECTION_NAMES[name] for name in sandbox.get("off", ()) if name in PROTECTION_NAMES]
    if not off:
        return ""
    reason = "the grader is not running as root" if os.geteuid() != 0 else "this kernel refused"
    return f"note: student code ran without {'; '.join(off)} ({reason}; see docs/security.md)."
