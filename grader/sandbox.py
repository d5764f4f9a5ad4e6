"""The trusted side of the sandbox: start the fork server, hand it jobs, enforce limits, decode.

The fork server (grader/sandbox_server.py) imports torch once and forks a fresh child per
job, so every test is isolated without paying `import torch` per test. Everything that
decides a score stays here: time limits are enforced by killing the child's process
group from this side, and results are decoded with `torch.load(weights_only=True)`, a
size cap and exact type checks. Student code is never imported or unpickled here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from grader.assignment import Limits
from grader.errors import ConfigError

log = logging.getLogger(__name__)

SERVER_SCRIPT = Path(__file__).with_name("sandbox_server.py")
# Student code runs as a uid from this range, unique per live sandbox (kept below 65536 so it
# also works inside user-namespaced containers, which often map only that many ids).
SANDBOX_UID_BASE = 40_000
SANDBOX_UID_SPAN = 20_000
MAX_RESULT_BYTES = 256 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
SERVER_START_TIMEOUT_S = 180.0
PROTOCOL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SandboxSettings:
    limits: Limits
    device: str = "cpu"
    threads: int = 1
    # Paths student code must not see (solutions, results, Gradescope metadata).
    hide: tuple[Path, ...] = ()
    keep_jobs: bool = False


@dataclass(frozen=True)
class StudentOutput:
    """What the student's code printed, trimmed to a head and a tail."""

    stdout: str = ""
    stderr: str = ""

    def for_feedback(self) -> str:
        parts = []
        if self.stdout.strip():
            parts.append(f"Your code printed:\n{self.stdout.rstrip()}")
        if self.stderr.strip():
            parts.append(f"Your code wrote to stderr:\n{self.stderr.rstrip()}")
        return "\n".join(parts)


class StudentFailure(Exception):
    """The student's code did not produce a result; `message` is written for the student."""

    def __init__(
        self,
        outcome: str,
        message: str,
        *,
        detail: str = "",
        output: StudentOutput | None = None,
        at_import: bool = False,
    ) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message
        self.detail = detail
        self.output = output or StudentOutput()
        self.at_import = at_import


@dataclass
class PendingJob:
    id: int
    module: str
    job_dir: Path
    pid: int
    deadline: float
    started: float = field(default_factory=time.monotonic)


def _sandbox_identity() -> tuple[int, int] | None:
    """The (uid, gid) this sandbox's student code runs as, or None when we cannot switch users.

    Each sandbox gets a uid of its own, unused by any account: the sweep that kills every
    process of that uid then cannot touch another grader's jobs on the same machine (batch
    workers, parallel test runs). A uid needs no passwd entry to be switched to.
    """
    if os.geteuid() != 0:
        return None
    for attempt in range(SANDBOX_UID_SPAN):
        uid = SANDBOX_UID_BASE + (os.getpid() + attempt) % SANDBOX_UID_SPAN
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid, uid
    log.warning(
        "no free uid in %d..%d for the sandbox",
        SANDBOX_UID_BASE,
        SANDBOX_UID_BASE + SANDBOX_UID_SPAN,
    )
    return None


def _scrubbed_environment(settings: SandboxSettings, home: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home),
        "OMP_NUM_THREADS": str(settings.threads),
        "MKL_NUM_THREADS": str(settings.threads),
        # Ask NVML, not the CUDA driver, whether a GPU exists, so the server stays forkable.
        "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    }
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


def _read_capped(path: Path, limit: int) -> str:
    """The head and tail of a file, `limit` bytes in all, so a flood cannot swamp feedback."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size <= limit:
                data = handle.read()
                return data.decode("utf-8", errors="replace")
            head = handle.read(limit // 2)
            handle.seek(size - limit // 2)
            tail = handle.read()
    except OSError:
        return ""
    skipped = size - len(head) - len(tail)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[... {skipped} bytes of output left out ...]\n"
        + tail.decode("utf-8", errors="replace")
    )


def check_plain_data(value: Any, where: str = "the result") -> None:
    """Refuse anything but plain data: exact types only, so no subclass can lie to a comparison."""
    if value is None or type(value) in (bool, int, float, str):
        return
    if type(value) is torch.Tensor:
        return
    if type(value) in (list, tuple):
        for index, item in enumerate(value):
            check_plain_data(item, f"{where}[{index}]")
        return
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(f"{where} has a key that is not a string")
            check_plain_data(item, f"{where}[{key!r}]")
        return
    raise TypeError(f"{where} is a {type(value).__name__}, which is not plain data")


def decode_result(path: Path, *, max_bytes: int = MAX_RESULT_BYTES) -> Any:
    """Load a result file the student side wrote, without ever running code from it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(
            f"the result is {size / 2**20:.0f} MiB, over the {max_bytes >> 20} MiB cap"
        )
    value = torch.load(path, weights_only=True, map_location=None)
    check_plain_data(value)
    return value


class Sandbox:
    """A fork server for one submission; use as a context manager."""

    def __init__(self, settings: SandboxSettings, submission_files: dict[str, Path], workdir: Path):
        self.settings = settings
        self.submission_files = dict(submission_files)
        self.workdir = workdir
        self.identity = _sandbox_identity()
        self.protections: dict[str, bool] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._job_count = 0

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def use_submission(self, submission_files: dict[str, Path]) -> None:
        """Serve later jobs from these files: one warm server can grade many submissions."""
        self.submission_files = dict(submission_files)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # The sandbox user must be able to reach its own job folders, and nothing else here.
        os.chmod(self.workdir, 0o711)
        (self.workdir / "jobs").mkdir(exist_ok=True)
        os.chmod(self.workdir / "jobs", 0o711)
        config = {
            "threads": self.settings.threads,
            "device": self.settings.device,
            "limits": {
                "timeout_s": self.settings.limits.timeout_s,
                "memory_mb": self.settings.limits.memory_mb,
                "max_processes": self.settings.limits.max_processes,
                "max_file_mb": self.settings.limits.max_file_mb,
            },
            "hide": [str(path) for path in self.settings.hide if path.exists()],
            "uid": self.identity[0] if self.identity else None,
            "gid": self.identity[1] if self.identity else None,
        }
        log_file = (self.workdir / "server.log").open("ab")
        self._process = subprocess.Popen(
            [sys.executable, "-I", str(SERVER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=self.workdir,
            env=_scrubbed_environment(self.settings, self.workdir),
            start_new_session=True,
        )
        log_file.close()
        self._buffer = b""
        self._send(config)
        ready = self._receive(SERVER_START_TIMEOUT_S)
        if ready is None or ready.get("event") != "ready":
            log_tail = _read_capped(self.workdir / "server.log", 4000)
            self.close()
            raise ConfigError(f"the sandbox could not start torch; its log ends with:\n{log_tail}")
        self.protections = dict(ready.get("protections", {}))
        log.debug("sandbox ready in %.2fs: %s", ready.get("warm_up_s", 0.0), self.protections)

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin:
            process.stdin.close()
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
        self, *, module: str, probe_file: Path, probe: str, kwargs: dict[str, Any]
    ) -> PendingJob:
        """Start a probe against the student's `module`; collect it with `result`."""
        if self._process is None or self._process.poll() is not None:
            log.warning("the sandbox server was gone; starting a new one")
            self.close()
            self.start()
        self._job_count += 1
        job_dir = self.workdir / "jobs" / f"{self._job_count:04d}"
        submission_dir = job_dir / "submission"
        submission_dir.mkdir(parents=True)
        for name, source in self.submission_files.items():
            shutil.copyfile(source, submission_dir / name)
        shutil.copyfile(probe_file, job_dir / "probes.py")
        torch.save(kwargs, job_dir / "input.pt")
        if self.identity:
            for path in (job_dir, submission_dir, *job_dir.rglob("*")):
                os.chown(path, *self.identity)
        self._send(
            {"id": self._job_count, "job_dir": str(job_dir), "module": module, "probe": probe}
        )
        started = self._receive(PROTOCOL_TIMEOUT_S)
        if started is None or started.get("event") != "started":
            self.close()
            raise StudentFailure(
                "error",
                "The sandbox that runs your code stopped unexpectedly; this test could not run.",
                detail=f"fork server answered {started!r}",
            )
        return PendingJob(
            id=self._job_count,
            module=module,
            job_dir=job_dir,
            pid=int(started["pid"]),
            deadline=time.monotonic() + self.settings.limits.timeout_s,
        )

    def result(self, job: PendingJob) -> Any:
        """Wait for the job (killing it at its deadline) and return its decoded result."""
        timed_out = False
        exited = self._receive(max(0.0, job.deadline - time.monotonic()))
        if exited is None:
            timed_out = True
            self._kill_group(job.pid)
            exited = self._receive(PROTOCOL_TIMEOUT_S)
        self._kill_group(job.pid)  # whatever the child left behind in its group
        self._sweep()
        elapsed = time.monotonic() - job.started
        try:
            return self._interpret(job, exited, timed_out=timed_out, elapsed=elapsed)
        finally:
            if not self.settings.keep_jobs:
                shutil.rmtree(job.job_dir, ignore_errors=True)

    def _interpret(
        self, job: PendingJob, exited: dict[str, Any] | None, *, timed_out: bool, elapsed: float
    ) -> Any:
        limit = self.settings.limits.max_output_kb * 1024
        output = StudentOutput(
            stdout=_read_capped(job.job_dir / "stdout.txt", limit),
            stderr=_read_capped(job.job_dir / "stderr.txt", limit),
        )
        imported = (job.job_dir / "imported").exists()
        file_name = f"{job.module}.py"
        if timed_out:
            where = "running your code" if imported else f"importing {file_name}"
            raise StudentFailure(
                "timeout",
                f"Stopped after {self.settings.limits.timeout_s:g} s while {where}. Look for an "
                "infinite loop, a sleep, or far more work than asked (e.g. too many steps); "
                "code at the top level of your file runs on import.",
                output=output,
                at_import=not imported,
            )
        if exited is None:
            self.close()
            raise StudentFailure(
                "error", "The sandbox that runs your code stopped unexpectedly.", output=output
            )
        status = int(exited["status"])
        error_file = job.job_dir / "error.json"
        result_file = job.job_dir / "result.pt"
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and result_file.exists():
            try:
                return decode_result(result_file)
            except Exception as error:
                raise StudentFailure(
                    "error",
                    "Your code's result could not be read as plain data (tensors, numbers, "
                    f"lists, dicts): {_short(error)}",
                    detail=repr(error),
                    output=output,
                ) from None
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 2 and error_file.exists():
            raise self._student_exception(error_file, file_name, output)
        raise StudentFailure(
            "error",
            _explain_exit(status, file_name, self.settings.limits, elapsed),
            detail=f"raw wait status {status}",
            output=output,
            at_import=not imported,
        )

    def _student_exception(
        self, error_file: Path, file_name: str, output: StudentOutput
    ) -> StudentFailure:
        try:
            if error_file.stat().st_size > MAX_ERROR_BYTES:
                raise ValueError("error report too large")
            report = json.loads(error_file.read_text(encoding="utf-8"))
            kind, message = str(report["type"])[:200], str(report["message"])[:4000]
            phase, line = str(report["phase"]), report.get("line")
            traceback_text = str(report.get("traceback", ""))[:8000]
        except (ValueError, KeyError, TypeError, OSError):
            return StudentFailure(
                "error", "Your code failed and its error could not be read.", output=output
            )
        where = f" (line {line} of {file_name})" if isinstance(line, int) else ""
        if kind == "NotImplementedError":
            text = f"Not implemented yet: {message or 'NotImplementedError'}{where}."
        elif phase == "import":
            text = f"{file_name} failed to import: {kind}: {message}{where}."
        elif phase == "output":
            text = f"Your function returned something that cannot be graded: {message}."
        elif kind in ("SystemExit", "KeyboardInterrupt"):
            text = (
                f"Your code raised {kind}{where}; never call sys.exit() or exit() in a submission."
            )
        elif kind == "MemoryError":
            text = (
                f"Your code ran out of memory{where} (limit {self.settings.limits.memory_mb} MB). "
                "Check for tensors far larger than the inputs."
            )
        else:
            text = f"Your code raised {kind}: {message}{where}."
        return StudentFailure(
            "error",
            text,
            detail=traceback_text,
            output=output,
            at_import=phase == "import",
        )

    # -- plumbing ---------------------------------------------------------------------------

    def _kill_group(self, pid: int) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue

    def _sweep(self) -> None:
        """Kill every process of the sandbox user: double-forked daemons escape process groups."""
        if not self.identity:
            return
        uid = self.identity[0]
        for _ in range(3):
            killed = False
            for status_file in Path("/proc").glob("[0-9]*/status"):
                try:
                    uid_line = next(
                        line
                        for line in status_file.read_text().splitlines()
                        if line.startswith("Uid:")
                    )
                except (OSError, StopIteration):
                    continue
                if int(uid_line.split()[1]) == uid:
                    try:
                        os.kill(int(status_file.parent.name), signal.SIGKILL)
                        killed = True
                    except (ProcessLookupError, PermissionError):
                        pass
            if not killed:
                return
            time.sleep(0.02)

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
            self._process.stdin.flush()
        except BrokenPipeError:
            pass  # noticed by the next _receive

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message from the server, or None on timeout or if it died."""
        assert self._process is not None and self._process.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self._process.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            return None
        return message


def _short(error: BaseException, limit: int = 300) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:limit]


def _explain_exit(status: int, file_name: str, limits: Limits, elapsed: float) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return f"Your code used more than {limits.timeout_s:g} s of CPU time and was stopped."
        if number == signal.SIGKILL:
            return (
                "Your code was killed (most often for using too much memory: the limit is "
                f"{limits.memory_mb} MB), after {elapsed:.1f} s."
            )
        if number == signal.SIGSEGV:
            return "Your code crashed with a segmentation fault."
        name = (
            signal.Signals(number).name if number in signal.Signals._value2member_map_ else number
        )
        return f"Your code's process was ended by signal {name}."
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return (
        f"Your code ended the process (exit status {code}) before returning a result. Do not "
        f"call sys.exit(), exit() or os._exit() in {file_name}."
    )
