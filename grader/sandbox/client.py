"""The trusted side of the sandbox: start the fork server, hand it jobs, enforce limits, decode.

The fork server (server.py, beside this file) imports torch once and forks a fresh process tree
per job, so every test is isolated without paying `import torch` per test. Everything that
decides a score stays here: a wall-time backstop kills the job's process group from this
side, every process of the sandbox's own uid is killed after the job, and results are
read as JSON and raw tensor bytes (no unpickler), with size caps and exact types. Student
code is never imported or unpickled here. docs/security.md describes the whole model.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.errors import ConfigError
from grader.sandbox.feedback import CPU_GRACE_S, interpret, read_capped
from grader.sandbox.identity import SandboxIdentity, claim_identity, kill_uid, remove_files_of
from grader.sandbox.job_files import SharedFiles, give_to_sandbox_group
from grader.sandbox.protocol import EXIT_SETUP, MAX_OPEN_FILES, Config, Job, SubmissionRequest
from grader.sandbox.settings import PROTECTION_NAMES, SandboxSettings
from grader.sandbox.zygote import (
    MessageLines,
    PreforkedZygote,
    scrubbed_environment,
    start_zygote,
)

log = logging.getLogger(__name__)

# World-writable places that each job gets as a private, empty, size-capped tmpfs.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
SERVER_START_TIMEOUT_S = 180.0
PROTOCOL_TIMEOUT_S = 30.0
# The job's monitor enforces the wall time; this side kills everything if it has not by then.
BACKSTOP_GRACE_S = 5.0


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the student's code); the test cannot be graded."""


@dataclass
class PendingJob:
    id: int
    module: str
    job_dir: Path
    deadline: float
    # The job's wall-time limit: the test's, or less where its part's budget has less left.
    timeout_s: float
    started: float = field(default_factory=time.monotonic)


def _started(progress: Path) -> bool:
    """Whether the student process got as far as starting the student's code."""
    try:
        return progress.stat().st_size > 0
    except OSError:
        return False


def _restrict(path: Path) -> None:
    """Take away other users' access to a hidden path: the fallback where mounts are not allowed."""
    with contextlib.suppress(OSError):
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o007:
            path.chmod(stat.S_IMODE(mode) & ~0o007)
            log.info("removed other users' access to %s", path)


class Sandbox:
    """A fork server for one submission; use as a context manager.

    The server dies with the thread that started it (so that a grader killed for memory
    takes every student process with it): start it from a thread that outlives it.
    """

    def __init__(
        self,
        settings: SandboxSettings,
        submission_files: dict[str, Path],
        workdir: Path,
        *,
        preforked: PreforkedZygote | None = None,
    ):
        self.settings = settings
        # A zygote forked from this process before it held anything secret: the first start
        # uses it; a restart after it died starts a fresh interpreter.
        self._preforked = preforked
        self.workdir = workdir
        self.identity: SandboxIdentity | None = None
        # What is in force for student code (environment.sandbox in report.json).
        self.protections: dict[str, Any] = {}
        # The zygote: its control socket (our end), and its replies on its stdout.
        self._process: subprocess.Popen[bytes] | PreforkedZygote | None = None
        self._control: socket.socket | None = None
        self._zygote_replies = MessageLines(-1)
        # The current submission's server, forked by the zygote: its pid and protocol socket.
        self._server_pid = 0
        # The part module whose jobs the current server runs: each gets a server of its own.
        self._server_module = ""
        self._channel: socket.socket | None = None
        self._replies = MessageLines(-1)
        self._job_count = 0
        self._ready = False
        # What every job reads, written once per submission rather than once per job.
        self.shared = SharedFiles(workdir / "shared", submission_files)

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def use_submission(
        self, submission_files: dict[str, Path], imports: Mapping[str, Iterable[str]]
    ) -> None:
        """Serve later jobs from these files: one warm zygote can grade many submissions.

        Their jobs get servers of their own (one per part module), forked from the zygote, so
        nothing the last submission's servers held (its files, its output) is in their memory.
        """
        self._end_submission_server()
        self.shared.use_submission(submission_files, imports)

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the fork server without waiting for it: it imports torch meanwhile.

        Launched before the trusted side imports torch itself, the two imports overlap;
        `submit` waits for readiness when the first job comes.
        """
        if self.identity is None:
            self.identity = claim_identity()
        self.workdir.mkdir(parents=True, exist_ok=True)
        # The sandbox user must be able to reach its own job folders, and nothing else here.
        os.chmod(self.workdir, 0o711)
        (self.workdir / "jobs").mkdir(exist_ok=True)
        os.chmod(self.workdir / "jobs", 0o711)
        probe_dir = self.workdir / "jobs" / "probe"
        probe_dir.mkdir(exist_ok=True)
        hide = [path for path in self.settings.hide if os.path.lexists(path)]
        if self.identity:
            for path in hide:
                _restrict(path)
        limits = self.settings.limits
        config: Config = {
            "threads": self.settings.threads,
            "device": self.settings.device,
            "limits": {
                "timeout_s": limits.timeout_s,
                "cpu_s": int(limits.timeout_s) + CPU_GRACE_S,
                "memory_mb": limits.memory_mb,
                "max_processes": limits.max_processes,
                "max_file_mb": limits.max_file_mb,
                "tmp_mb": limits.max_file_mb,
                "max_output_bytes": limits.max_output_kb * 1024,
            },
            "hide": [str(path) for path in hide],
            "private_dirs": list(
                dict.fromkeys([*PRIVATE_DIRS, tempfile.gettempdir(), str(self.workdir)])
            ),
            "probe_dir": str(probe_dir),
            "workdir": str(self.workdir),
            "parent": os.getpid(),
            "uid": self.identity.uid if self.identity else None,
            "gid": self.identity.gid if self.identity else None,
            "environment": scrubbed_environment(self.settings, self.workdir),
        }
        preforked, self._preforked = self._preforked, None
        if preforked is not None:
            self._process, control = preforked, preforked.control
        else:
            self._process, control = start_zygote(config, self.workdir)
        assert self._process.stdout is not None
        self._control = control
        self._zygote_replies = MessageLines(self._process.stdout.fileno())
        self._ready = False
        with contextlib.suppress(OSError):
            control.sendall((json.dumps(config) + "\n").encode())

    def wait_ready(self) -> None:
        """Wait until the launched server has imported torch and probed its protections."""
        ready = self._zygote_replies.receive(SERVER_START_TIMEOUT_S)
        if ready is None or ready.get("event") != "ready":
            log_tail = read_capped(self.workdir / "server.log", 4000)
            self._stop()
            raise ConfigError(f"the sandbox could not start torch; its log ends with:\n{log_tail}")
        self.protections = self._describe(dict(ready.get("protections", {})))
        self.protections["gpu_memory_cap"] = str(ready.get("gpu_memory_cap", "unknown"))
        self._ready = True
        log.debug("sandbox ready in %.2fs: %s", ready.get("warm_up_s", 0.0), self.protections)

    def _describe(self, protections: dict[str, bool]) -> dict[str, Any]:
        limits = self.settings.limits
        off = [name for name in PROTECTION_NAMES if not protections.get(name)]
        return {
            **{name: bool(protections.get(name)) for name in PROTECTION_NAMES},
            "uid": self.identity.uid if self.identity else os.geteuid(),
            "limits": {
                "wall_s": limits.timeout_s,
                "cpu_s": int(limits.timeout_s) + CPU_GRACE_S,
                "memory_mb": limits.memory_mb if self.settings.device == "cpu" else None,
                "max_processes": limits.max_processes,
                "max_file_mb": limits.max_file_mb,
                "max_open_files": MAX_OPEN_FILES,
                "max_output_kb": limits.max_output_kb,
                "tmp_mb": limits.max_file_mb,
                "core_dumps": False,
            },
            "off": off,
        }

    def close(self) -> None:
        """Stop the server, kill what is left of the student's processes, give the uid back."""
        self._stop()
        identity, self.identity = self.identity, None
        if identity and identity.lock_fd is not None:
            os.close(identity.lock_fd)

    def _stop(self) -> None:
        self._end_submission_server()
        process, self._process = self._process, None
        if self._control is not None:
            self._control.close()
            self._control = None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            if process.stdout:
                process.stdout.close()
        self._sweep()

    # -- jobs -------------------------------------------------------------------------------

    def run(self, *, module: str, probe_file: Path, probe: str, kwargs: dict[str, Any]) -> Any:
        return self.result(
            self.submit(module=module, probe_file=probe_file, probe=probe, kwargs=kwargs)
        )

    def submit(
        self,
        *,
        module: str,
        probe_file: Path,
        probe: str,
        kwargs: dict[str, Any],
        timeout_s: float | None = None,
        import_student: bool = True,
    ) -> PendingJob:
        """Start a probe against the student's `module`; collect it with `result`.

        The job gets the test's time limit, or `timeout_s` where that is shorter. With
        `import_student=False` the probe gets None for the module, and the job sees no file of
        the submission: it judges data the student's code made, where none of it runs.
        """
        if self._process is None or self._process.poll() is not None:
            log.warning("the sandbox server was gone; starting a new one")
            self._stop()
            self.start()
        elif not self._ready:
            self.wait_ready()
        if self._channel is not None and module != self._server_module:
            # The server keeps what it drained from its jobs (their output, which can be
            # code) in its heap, and every later job is a copy of it: a fresh server per
            # module, forked from the zygote, holds nothing another part's jobs wrote.
            self._end_submission_server()
        # Before a server is forked: its request carries the probe file to the zygote, which
        # imports it once, so that no server imports it (and re-freezes its heap) itself.
        probe_copy = self.shared.probe_copy(probe_file, self.identity)
        if self._channel is None:
            self._start_submission_server()
            self._server_module = module
        if import_student:
            submission_dir = self.shared.module_view(module, self.identity)
        else:
            submission_dir = self.shared.empty_view(self.identity)
        self._job_count += 1
        job_dir = self.workdir / "jobs" / f"{self._job_count:04d}"
        job_dir.mkdir()
        # Pickled, since it travels from this side to the student's (never the other way):
        # unpickling there is several times cheaper than torch.load.
        (job_dir / "input.pkl").write_bytes(pickle.dumps(kwargs, protocol=pickle.HIGHEST_PROTOCOL))
        home = job_dir / "home"  # the student's home only where no private /tmp is possible
        home.mkdir(mode=0o700)
        if self.identity:
            give_to_sandbox_group(self.identity, job_dir, job_dir / "input.pkl")
            os.chown(home, self.identity.uid, self.identity.gid)
            os.chmod(home, 0o700)
        timeout = self.settings.limits.timeout_s
        if timeout_s is not None:
            timeout = min(timeout, timeout_s)
        job: Job = {
            "id": self._job_count,
            "job_dir": str(job_dir),
            "submission_dir": str(submission_dir),
            "probe_file": str(probe_copy),
            "module": module,
            "probe": probe,
            "timeout_s": timeout,
            "import_student": import_student,
        }
        self._send(job)
        # The server's "started" is read in `result`: meanwhile this side runs the reference.
        return PendingJob(
            id=self._job_count,
            module=module,
            job_dir=job_dir,
            deadline=time.monotonic() + timeout + BACKSTOP_GRACE_S,
            timeout_s=timeout,
        )

    def result(self, job: PendingJob) -> Any:
        """Wait for the job (killing it after its deadline) and return its decoded result."""
        started = self._replies.receive(PROTOCOL_TIMEOUT_S)
        if started is None or started.get("event") != "started":
            self._lose_submission_server()
            raise SandboxError(f"the fork server did not start the job: {started!r}")
        exited = self._replies.receive(max(0.0, job.deadline - time.monotonic()))
        if exited is None and self._replies.closed:
            # The server died under the job: the grader's failure, never the student's timeout.
            self._kill_group(int(started["pid"]))
            self._lose_submission_server()
            raise SandboxError("the fork server stopped while running the job")
        backstop = exited is None
        if backstop:
            log.warning("job %d outlived its monitor's deadline; killing it", job.id)
            self._kill_group(int(started["pid"]))
            exited = self._replies.receive(PROTOCOL_TIMEOUT_S)
        if not self.protections.get("pid_namespace"):
            self._sweep()  # without a pid namespace, daemons could outlive the job
        elapsed = time.monotonic() - job.started
        try:
            return self._interpret(job, exited, backstop=backstop, elapsed=elapsed)
        finally:
            if not self.settings.keep_jobs:
                shutil.rmtree(job.job_dir, ignore_errors=True)

    def _summary(self, exited: dict[str, Any] | None) -> dict[str, Any]:
        """What the server saw of the job (our code, never the student's), or a SandboxError."""
        if exited is None or exited.get("event") != "exited":
            self._lose_submission_server()
            raise SandboxError(f"the fork server stopped while running the job: {exited!r}")
        if exited.get("refused"):
            raise SandboxError(f"the job was not run: {exited['refused']}")
        if "setup" not in exited and not exited.get("timed_out"):
            raise SandboxError("the student process failed before its isolation was in place")
        return exited

    def _interpret(
        self, job: PendingJob, exited: dict[str, Any] | None, *, backstop: bool, elapsed: float
    ) -> Any:
        summary = None if backstop else self._summary(exited)
        self._refuse_setup_failure(job, summary)
        return interpret(
            summary,
            job_dir=job.job_dir,
            module=job.module,
            limits=replace(self.settings.limits, timeout_s=job.timeout_s),
            elapsed=elapsed,
        )

    def _refuse_setup_failure(self, job: PendingJob, summary: dict[str, Any] | None) -> None:
        """A job that ended with the set-up's status before the student's code could start
        (isolation, limits, CUDA's set-up failed) is the grader's failure: a SandboxError with
        the server's log, never the student's exit."""
        status = summary.get("status") if summary else None
        if type(status) is not int or not os.WIFEXITED(status):
            return
        if os.WEXITSTATUS(status) == EXIT_SETUP and not _started(job.job_dir / "progress"):
            # Its own traceback went to its stderr (redirected to the job's file by then) or,
            # earlier in its set-up, to the server's log: no student code had run to write
            # either.
            log_tail = read_capped(self.workdir / "server.log", 4000)
            stderr_tail = read_capped(job.job_dir / "stderr.txt", 4000)
            raise SandboxError(
                "the student process failed to set up; its stderr ends:\n"
                f"{stderr_tail}\nthe server's log ends:\n{log_tail}"
            )

    # -- plumbing ---------------------------------------------------------------------------

    def _kill_group(self, pid: int) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue

    def _sweep(self) -> None:
        """Kill every process of the sandbox's uid: double-forked daemons escape process groups."""
        if not self.identity:
            return
        survivors = kill_uid(self.identity.uid, self.identity.gid)
        if survivors:
            raise SandboxError(f"processes of the sandbox uid survived the sweep: {survivors}")
        if not self.protections.get("private_tmp"):
            roots = [*PRIVATE_DIRS, tempfile.gettempdir(), "/run/lock"]
            remove_files_of(self.identity.uid, [Path(p) for p in dict.fromkeys(roots)])

    def _start_submission_server(self) -> None:
        """Have the zygote fork a server for the current submission, on a socket of its own.

        The socket's far end goes to the zygote as a descriptor (SCM_RIGHTS), so the
        submission's protocol never passes through the zygote's memory. The probe files known
        so far go with the request: the zygote imports them once for every later server.
        """
        assert self._control is not None
        ours, theirs = socket.socketpair()
        request: SubmissionRequest = {
            "probe_files": [str(path) for path in self.shared.probe_copies()]
        }
        with theirs:
            try:
                socket.send_fds(self._control, [json.dumps(request).encode()], [theirs.fileno()])
            except OSError:
                ours.close()
                self._stop()
                raise SandboxError("the sandbox's zygote is gone") from None
        forked = self._zygote_replies.receive(PROTOCOL_TIMEOUT_S)
        if forked is None or forked.get("event") != "forked":
            ours.close()
            self._stop()
            raise SandboxError(f"the sandbox's zygote did not fork a server: {forked!r}")
        self._server_pid = int(forked["pid"])
        self._channel = ours
        self._replies = MessageLines(ours.fileno())

    def _end_submission_server(self) -> None:
        """Close the submission's channel and kill its server (the zygote reaps it)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
        self._replies = MessageLines(-1)
        pid, self._server_pid = self._server_pid, 0
        if pid:
            # Not yet reaped (the zygote reaps only when asked for the next server): the
            # pid is still this server's.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def _lose_submission_server(self) -> None:
        """After the submission's server failed: end it, and whatever of the job is left."""
        self._end_submission_server()
        self._sweep()

    def _send(self, message: Job) -> None:
        assert self._channel is not None
        # A server that is gone is noticed by the next receive.
        with contextlib.suppress(OSError):
            self._channel.sendall((json.dumps(message) + "\n").encode())
