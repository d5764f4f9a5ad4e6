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
import hashlib
import importlib.util
import json
import logging
import os
import pickle
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from grader.errors import ConfigError
from grader.intake.source_check import import_closure
from grader.sandbox.feedback import CPU_GRACE_S, interpret, read_capped
from grader.sandbox.identity import SandboxIdentity, claim_identity, kill_uid, remove_files_of
from grader.sandbox.jsonlines import JsonLines
from grader.sandbox.protocol import EXIT_SETUP, MAX_OPEN_FILES, Config, Job, SubmissionRequest
from grader.sandbox.settings import PROTECTION_NAMES, SandboxSettings

log = logging.getLogger(__name__)

SERVER_SCRIPT = Path(__file__).with_name("server.py")
# Descriptors a forked zygote closes: everything this process had open but the protocol's.
MAX_INHERITED_FD = 65536
# World-writable places that each job gets as a private, empty, size-capped tmpfs.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
SERVER_START_TIMEOUT_S = 180.0
PROTOCOL_TIMEOUT_S = 30.0
# The job's monitor enforces the wall time; this side kills everything if it has not by then.
BACKSTOP_GRACE_S = 5.0
# The server's messages are small (job started, job exited, ready); a longer line is dropped.
MAX_MESSAGE_BYTES = 1 << 20


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


class PreforkedZygote:
    """The sandbox's zygote, forked from this process rather than started as a new one.

    `import torch` is most of what starting a grader costs, and the trusted side and the
    zygote each paid it. A process that has imported torch but holds nothing of a grading
    run yet (a grading worker before it reads its first line) forks the zygote from itself
    instead, and the two share one import. The zygote holds what this process held at the
    fork, so only fork where that is nothing secret: no submission, no solution, no seed, and
    an environment already scrubbed (a student process can read the initial environment
    block it inherits). It then runs server.py's `main`, as `python -I server.py` would.
    Duck-types the parts of `subprocess.Popen` the sandbox uses: pid, stdout, poll, wait.
    """

    def __init__(self) -> None:
        self.control, zygote_end = socket.socketpair()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child becomes the zygote and never returns
            _become_zygote(zygote_end.fileno(), write_fd)
        zygote_end.close()
        os.close(write_fd)
        self.pid = pid
        self.stdout = os.fdopen(read_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self) -> int:
        returncode = self._reap(0)
        assert returncode is not None
        return returncode

    def _reap(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped elsewhere: its status is lost
                self.returncode = -signal.SIGKILL
            else:
                if pid != 0:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def _become_zygote(control_fd: int, replies_fd: int) -> NoReturn:  # pragma: no cover
    """In the forked child: the descriptors and session `python -I server.py` would have.

    The environment, working folder and log come with the Config (server.py's `main`).
    """
    code = 1
    try:
        os.setsid()
        os.dup2(control_fd, 0)
        os.dup2(replies_fd, 1)
        os.closerange(3, MAX_INHERITED_FD)
        # What `-I` leaves out: the working folder and PYTHONPATH (the course checkout).
        extra = {"", os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)}
        sys.path[:] = [entry for entry in sys.path if entry not in extra]
        spec = importlib.util.spec_from_file_location("_grader_sandbox_server", SERVER_SCRIPT)
        assert spec is not None and spec.loader is not None
        server = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = server  # as for any module: its dataclasses look it up
        spec.loader.exec_module(server)
        code = server.main()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


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
        self.submission_files = dict(submission_files)
        # File name -> the modules it imports: a job's module folder holds its import closure.
        self.submission_imports: dict[str, tuple[str, ...]] = {}
        self.workdir = workdir
        self.identity: SandboxIdentity | None = None
        # What is in force for student code (environment.sandbox in report.json).
        self.protections: dict[str, Any] = {}
        # The zygote: its control socket (our end), and its replies on its stdout.
        self._process: subprocess.Popen[bytes] | PreforkedZygote | None = None
        self._control: socket.socket | None = None
        self._zygote_replies = _Lines(-1)
        # The current submission's server, forked by the zygote: its pid and protocol socket.
        self._server_pid = 0
        # The part module whose jobs the current server runs: each gets a server of its own.
        self._server_module = ""
        self._channel: socket.socket | None = None
        self._replies = _Lines(-1)
        self._job_count = 0
        self._ready = False
        # What every job reads, written once per submission rather than once per job: the
        # submission's files and the probe files, laid out under `shared/`.
        self._shared_dir = workdir / "shared"
        # The modules whose jobs' folders (`_module_view`) hold this submission's files.
        self._module_views: set[str] = set()
        self._shared_probes: dict[Path, Path] = {}

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
        self.submission_files = dict(submission_files)
        self.submission_imports = {name: tuple(found) for name, found in imports.items()}
        self._module_views = set()

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
            "environment": _scrubbed_environment(self.settings, self.workdir),
        }
        preforked, self._preforked = self._preforked, None
        if preforked is not None:
            self._process, control = preforked, preforked.control
        else:
            self._process, control = self._start_zygote(config)
        assert self._process.stdout is not None
        self._control = control
        self._zygote_replies = _Lines(self._process.stdout.fileno())
        self._ready = False
        with contextlib.suppress(OSError):
            control.sendall((json.dumps(config) + "\n").encode())

    def _start_zygote(self, config: Config) -> tuple[subprocess.Popen[bytes], socket.socket]:
        """A zygote of its own: a fresh interpreter that imports torch itself."""
        log_file = (self.workdir / "server.log").open("ab")
        # Its stdin is a unix socket: each submission's channel is handed over through it.
        control, zygote_end = socket.socketpair()
        with zygote_end, log_file:
            process = subprocess.Popen(
                [sys.executable, "-I", str(SERVER_SCRIPT)],
                stdin=zygote_end.fileno(),
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=self.workdir,
                env=config["environment"],
                start_new_session=True,
            )
        return process, control

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
        probe_copy = self._probe_copy(probe_file)
        if self._channel is None:
            self._start_submission_server()
            self._server_module = module
        submission_dir = self._module_view(module) if import_student else self._empty_view()
        self._job_count += 1
        job_dir = self.workdir / "jobs" / f"{self._job_count:04d}"
        job_dir.mkdir()
        # Pickled, since it travels from this side to the student's (never the other way):
        # unpickling there is several times cheaper than torch.load.
        (job_dir / "input.pkl").write_bytes(pickle.dumps(kwargs, protocol=pickle.HIGHEST_PROTOCOL))
        home = job_dir / "home"  # the student's home only where no private /tmp is possible
        home.mkdir(mode=0o700)
        if self.identity:
            self._give_to_sandbox_group(job_dir, job_dir / "input.pkl")
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

    def _module_view(self, module: str) -> Path:
        """The files a job of `module` can import: its own and those it imports, directly or
        through another (`grader.intake.source_check.import_closure`), copied once per submission.

        Only these are on its path, and readable where the sandbox confines reads: a module
        named in a string (`unittest.mock.patch("other_part.helper")`) reaches no file that
        the part's source rules did not read.
        """
        modules = self._shared_dir / "modules"
        folder = modules / module
        if module not in self._module_views:
            if not self._module_views:  # only the submission being graded stays visible
                shutil.rmtree(modules, ignore_errors=True)
            folder.mkdir(parents=True)
            for name in import_closure(self.submission_imports, f"{module}.py"):
                if name in self.submission_files:
                    shutil.copyfile(self.submission_files[name], folder / name)
            if self.identity:
                self._give_to_sandbox_group(self._shared_dir, modules, folder, *folder.iterdir())
            self._module_views.add(module)
        return folder

    def _empty_view(self) -> Path:
        """A job's module folder that holds no file of the submission."""
        folder = self._shared_dir / "no-student-code"
        if not folder.exists():
            folder.mkdir(parents=True)
            if self.identity:
                self._give_to_sandbox_group(self._shared_dir, folder)
        return folder

    def _probe_copy(self, probe_file: Path) -> Path:
        """The probe file under a name of its content, so the server can import it just once."""
        if probe_file not in self._shared_probes:
            content = probe_file.read_bytes()
            folder = self._shared_dir / "probes"
            folder.mkdir(parents=True, exist_ok=True)
            copy = folder / f"{hashlib.sha256(content).hexdigest()[:24]}.py"
            copy.write_bytes(content)
            if self.identity:
                self._give_to_sandbox_group(self._shared_dir, folder, copy)
            self._shared_probes[probe_file] = copy
        return self._shared_probes[probe_file]

    def _give_to_sandbox_group(self, *paths: Path) -> None:
        """Readable by this sandbox's group alone (not other sandboxes' uids), writable by
        nobody but root: the student writes only through descriptors the monitor opened."""
        assert self.identity is not None
        for path in paths:
            os.chown(path, 0, self.identity.gid)
            os.chmod(path, 0o750 if path.is_dir() else 0o640)

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
            "probe_files": [str(path) for path in self._shared_probes.values()]
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
        self._replies = _Lines(ours.fileno())

    def _end_submission_server(self) -> None:
        """Close the submission's channel and kill its server (the zygote reaps it)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
        self._replies = _Lines(-1)
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


class _Lines:
    """The server's JSON messages, one a line, read from a descriptor with a timeout."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._reader = JsonLines(MAX_MESSAGE_BYTES)
        self._ready: deque[dict[str, Any]] = deque()
        # The other side closed its end (it died): no message will ever come.
        self.closed = False

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or once the other side is gone."""
        if self.fd < 0:
            return None
        deadline = time.monotonic() + timeout
        while not self._ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return None
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self._ready.extend(self._reader.feed(chunk))
        return self._ready.popleft()
