"""The grading workers: warm processes that grade one submission at a time, their line
protocol, and the executors that run them (local processes or Ray tasks)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from grader.assignment import Assignment, load_assignment
from grader.batch.discovery import BatchItem
from grader.course import COURSE_ENV, PACKAGE_ROOT
from grader.errors import GraderError, UsageError
from grader.jsonlines import JsonLines
from grader.refcache import ReferenceCache
from grader.report import MAX_REPORT_BYTES
from grader.sandbox.heap import collapse_private_memory
from grader.sandbox.settings import BUDGET_OVERRIDE_ENV, TIMEOUT_OVERRIDE_ENV
from grader.scratch import scratch_folder

if TYPE_CHECKING:
    from grader.sandbox.client import PreforkedZygote, Sandbox

log = logging.getLogger(__name__)


SCRATCH_PREFIX = "grader-batch-"
# A worker that holds one submission longer than this many times the student time a grade
# can take (each part's budget, `Limits.part_budget`) is stuck.
WATCHDOG_SLACK = 2
# Workers that die before grading anything, in a row, before the batch gives up.
MAX_FAILED_STARTS = 3
# How long an idle worker gets to shut its fork server down before it is killed.
STOP_TIMEOUT_S = 10.0
POLL_S = 5.0
PR_SET_PDEATHSIG = 1

# report.json's data as `grader.report.report_dict` builds it: what workers send back.
ReportData = dict[str, Any]


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker needs to grade like `grade` does; travels as JSON."""

    assignment: str
    device: str
    seed: int
    hide: tuple[str, ...] = ()
    # Where workers make their scratch folders ("" = the system's); the coordinator removes
    # it at the end, so even a killed worker leaves nothing behind.
    scratch: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        data = json.loads(text)
        return cls(
            assignment=str(data["assignment"]),
            device=str(data["device"]),
            seed=int(data["seed"]),
            hide=tuple(str(p) for p in data["hide"]),
            scratch=str(data.get("scratch", "")),
        )


class GradingWorker:
    """One warm grading process: torch imported once, one fork server for every submission."""

    def __init__(self, config: WorkerConfig, *, preforked: PreforkedZygote | None = None) -> None:
        from grader.devices import resolve_device
        from grader.grade import GradeSettings, sandbox_settings
        from grader.sandbox.client import Sandbox

        self.assignment = load_assignment(config.assignment)
        self.settings = GradeSettings(
            device=config.device, seed=config.seed, hide=tuple(Path(p) for p in config.hide)
        )
        device = resolve_device(config.device)
        # A Ray node without the coordinator's scratch folder uses its own temporary folder.
        scratch = config.scratch if config.scratch and Path(config.scratch).is_dir() else None
        self._scratch = contextlib.ExitStack()
        self._workdir = self._scratch.enter_context(
            scratch_folder(SCRATCH_PREFIX, Path(scratch) if scratch else None)
        )
        self.sandbox: Sandbox = Sandbox(
            sandbox_settings(self.assignment, self.settings, device),
            {},
            self._workdir / "sandbox",
            preforked=preforked,
        )
        self.sandbox.start()
        # Every submission here is graded with the same seed and reference, and the same
        # hidden tests, compiled once. (The scratch folder is out of the sandbox's reach.)
        self.reference_cache = ReferenceCache()
        self.bytecode_dir = self._workdir / "bytecode"
        self.bytecode_dir.mkdir(mode=0o700)
        self.graded = 0

    def grade(self, path: Path) -> ReportData:
        from grader.grade import grade_submission
        from grader.report import report_dict

        if self.graded == 1:
            # This process forks a bounded child for every source test and submission check
            # (about 9 a submission): 19 ms each from 4 KiB pages, 7 ms from 2 MiB ones. The
            # collapse costs 0.35 CPU-s once, which a worker grading one submission (as
            # `grade` runs it) would not win back.
            collapse_private_memory()
        self.graded += 1
        result = grade_submission(
            path,
            self.assignment,
            self.settings,
            sandbox=self.sandbox,
            reference_cache=self.reference_cache,
            bytecode_dir=self.bytecode_dir,
        )
        return report_dict(result)

    def close(self) -> None:
        self.sandbox.close()
        self._scratch.close()


def crashed_report(assignment: Assignment, message: str, *, seed: int, device: str) -> ReportData:
    """The report of a submission whose worker died or hung: 0 points, a grader error."""
    from grader.grade import crashed_result
    from grader.report import report_dict

    return report_dict(crashed_result(assignment, message, seed=seed, device=device))


def _die_with_parent(parent: int) -> None:
    """Exit when the coordinator does, even if it is killed without a chance to clean up."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the coordinator was already gone before the line above took effect


def serve_worker(parent: int) -> NoReturn:
    """A worker's main loop: a config line, then one JSON job per line on stdin."""
    # torch's import and warm-up leave some 300,000 long-lived objects, and a full collection
    # every few tens of thousands of new ones walked them all: 9 collections, 0.45 CPU-s of
    # a grade. `configure_trusted_process` collects once and freezes them instead.
    gc.disable()
    _die_with_parent(parent)
    # Replies go on a private copy of stdout; anything else printed lands in the worker log.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    # Nothing of the batch has been read yet (the coordinator gave us a scrubbed environment
    # and only its pid): the sandbox's zygote, forked now, shares our `import torch`.
    from grader.grade import GradeSettings, configure_trusted_process
    from grader.sandbox.client import PreforkedZygote

    configure_trusted_process(GradeSettings().threads)
    preforked = PreforkedZygote()
    config = WorkerConfig.from_json(sys.stdin.readline())
    try:
        worker = GradingWorker(config, preforked=preforked)
    except Exception as error:
        log.exception("worker start failed")
        reply({"event": "failed", "message": f"{type(error).__name__}: {error}"})
        _exit_now(1)
    reply({"event": "ready"})
    try:
        for line in sys.stdin:
            job = json.loads(line)
            done: dict[str, Any] = {"event": "done", "key": job["key"]}
            try:
                done["report"] = worker.grade(Path(job["path"]))
            except Exception as error:  # the grader's own failure; the coordinator records it
                log.exception("grading %s failed", job["path"])
                done["error"] = f"{type(error).__name__}: {error}"
            reply(done)
    finally:
        worker.close()
    _exit_now(0)


def _exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's teardown of torch (0.2 s, while `grade` waits)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# -- executors -------------------------------------------------------------------------------

EXECUTORS = ("local", "ray")
OnDone = Callable[[BatchItem, ReportData], None]


class Executor(Protocol):
    """Grades submissions, handing each one's report to `on_done` as it arrives.

    A submission whose grading failed (a worker died, hung, or the grader raised) still gets
    a report: `crashed_report`'s, which says so.
    """

    def run(self, items: list[BatchItem], on_done: OnDone) -> None: ...


def make_executor(
    kind: str,
    config: WorkerConfig,
    assignment: Assignment,
    *,
    workers: int,
    address: str | None,
    log_dir: Path,
) -> Executor:
    """`kind` is one of EXECUTORS: worker processes here, or Ray tasks."""
    if kind == "ray":
        return RayExecutor(config, assignment, workers=workers, address=address)
    return LocalExecutor(config, assignment, workers=workers, log_dir=log_dir)


@dataclass
class _WorkerProcess:
    slot: int
    process: subprocess.Popen[bytes]
    ready: bool = False
    item: BatchItem | None = None
    since: float = 0.0
    # A reply carries a whole report.json: bounded as reading one back is.
    replies: JsonLines = field(default_factory=lambda: JsonLines(MAX_REPORT_BYTES))
    graded: int = 0


class LocalExecutor:
    """Worker processes on this machine, each grading one submission at a time."""

    def __init__(
        self, config: WorkerConfig, assignment: Assignment, *, workers: int, log_dir: Path | None
    ) -> None:
        self.config = config
        self.assignment = assignment
        self.workers = workers
        self.log_dir = log_dir
        student_time = len(assignment.parts) * assignment.limits.part_budget
        self.watchdog_s = WATCHDOG_SLACK * student_time
        self._selector = selectors.DefaultSelector()
        self._failed_starts = 0

    def run(self, items: list[BatchItem], on_done: OnDone) -> None:
        queue = deque(items)
        pool: list[_WorkerProcess] = []
        try:
            for slot in range(min(self.workers, len(items))):
                pool.append(self._start(slot))
            while queue or any(w.item for w in pool):
                self._step(pool, queue, on_done)
            for worker in pool:
                self._stop(worker)
        finally:
            for worker in pool:
                self._kill(worker)
            self._selector.close()

    def _step(self, pool: list[_WorkerProcess], queue: deque[BatchItem], on_done: OnDone) -> None:
        """Hand out work, take in what came back, and replace the workers that died or hung."""
        for worker in pool:
            if worker.ready and worker.item is None and queue:
                self._assign(worker, queue.popleft())
        for worker, lines, ended in self._wait(pool):
            for message in lines:
                self._handle(worker, message, on_done, queue)
            if ended:
                pool[pool.index(worker)] = self._replace(worker, on_done, queue)
        for worker in pool:
            if worker.item and time.monotonic() - worker.since > self.watchdog_s:
                hung = (
                    f"Grading stopped after {self.watchdog_s:g} s without finishing; "
                    "the grader, not the submission's own tests, hung."
                )
                pool[pool.index(worker)] = self._replace(worker, on_done, queue, message=hung)

    def _start(self, slot: int) -> _WorkerProcess:
        with self._log_file(slot) as log_file:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from grader.batch.workers import serve_worker; "
                    "serve_worker(int(sys.argv[1]))",
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=PACKAGE_ROOT,
                env=worker_environment(),
                start_new_session=True,  # Ctrl-C reaches the coordinator, which stops workers
            )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((self.config.to_json() + "\n").encode())
        process.stdin.flush()
        os.set_blocking(process.stdout.fileno(), False)
        worker = _WorkerProcess(slot=slot, process=process)
        self._selector.register(process.stdout, selectors.EVENT_READ, worker)
        return worker

    def _log_file(self, slot: int) -> contextlib.AbstractContextManager[Any]:
        """The worker's stderr: a log per slot, or ours when there is no log folder."""
        if self.log_dir is None:
            return contextlib.nullcontext(None)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return (self.log_dir / f"worker-{slot}.log").open("ab")

    def _assign(self, worker: _WorkerProcess, item: BatchItem) -> None:
        assert worker.process.stdin is not None
        worker.item, worker.since = item, time.monotonic()
        job = {"key": item.key, "path": str(item.path.resolve())}
        try:
            worker.process.stdin.write((json.dumps(job) + "\n").encode())
            worker.process.stdin.flush()
        except BrokenPipeError:
            pass  # its end shows up as end-of-file on the next wait

    def _wait(
        self, pool: list[_WorkerProcess]
    ) -> Iterator[tuple[_WorkerProcess, list[dict[str, Any]], bool]]:
        busy = [w.since for w in pool if w.item]
        timeout = POLL_S
        if busy:
            timeout = min(timeout, max(0.0, min(busy) + self.watchdog_s - time.monotonic()))
        for key, _ in self._selector.select(timeout=timeout):
            worker: _WorkerProcess = key.data
            chunk = os.read(key.fd, 1 << 20)
            yield worker, worker.replies.feed(chunk), not chunk

    def _handle(
        self,
        worker: _WorkerProcess,
        message: dict[str, Any],
        on_done: OnDone,
        queue: deque[BatchItem],
    ) -> None:
        event = message.get("event")
        if event == "ready":
            worker.ready = True
            self._failed_starts = 0
        elif event == "failed":
            log.error("worker %d could not start: %s", worker.slot, message.get("message"))
        elif event == "done" and worker.item and message.get("key") == worker.item.key:
            item, worker.item = worker.item, None
            worker.graded += 1
            # The next submission first: recording this report (checked, written, printed)
            # would otherwise keep the worker, and so one core, idle.
            if queue:
                self._assign(worker, queue.popleft())
            report = message.get("report")
            if not isinstance(report, dict):
                report = self._crash(f"The grader failed: {message.get('error', 'no report')}")
            on_done(item, report)

    def _replace(
        self,
        worker: _WorkerProcess,
        on_done: OnDone,
        queue: deque[BatchItem],
        *,
        message: str = "",
    ) -> _WorkerProcess:
        """Record the lost submission, if any, and start a fresh worker in the same slot."""
        self._kill(worker)
        status = worker.process.returncode
        if not worker.ready:
            self._failed_starts += 1
            if self._failed_starts >= MAX_FAILED_STARTS:
                if self.log_dir is None:
                    raise GraderError("grading workers keep failing to start; see above")
                worker_log = self.log_dir / f"worker-{worker.slot}.log"
                raise GraderError(
                    f"batch workers keep failing to start; {worker_log} ends with:\n"
                    + _tail(worker_log)
                )
        if worker.item is not None:
            item, worker.item = worker.item, None
            on_done(
                item,
                self._crash(
                    message
                    or f"The grading worker stopped (exit status {status}) while grading this "
                    "submission; its other submissions were not affected."
                ),
            )
        return self._start(worker.slot) if queue else worker

    def _crash(self, message: str) -> ReportData:
        return crashed_report(
            self.assignment, message, seed=self.config.seed, device=self.config.device
        )

    def _stop(self, worker: _WorkerProcess) -> None:
        """Let an idle worker close its fork server and scratch folder, then reap it."""
        if worker.process.stdin is not None:
            with contextlib.suppress(OSError):
                worker.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(timeout=STOP_TIMEOUT_S)

    def _kill(self, worker: _WorkerProcess) -> None:
        process = worker.process
        with contextlib.suppress(KeyError, ValueError):
            assert process.stdout is not None
            self._selector.unregister(process.stdout)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


# What a worker keeps of the environment it is started from, by name. The sandbox's zygote is
# forked from the worker, so a student process can read the worker's initial environment
# block in its own memory: only variables grading needs, whose values are no secret, may be
# here (a staff token named GRADER_... must not come along).
WORKER_ENVIRONMENT = (
    COURSE_ENV,  # which course folder the worker's assignment comes from
    TIMEOUT_OVERRIDE_ENV,  # the per-test time limit, where staff lowered it
    BUDGET_OVERRIDE_ENV,  # each part's time budget, likewise
    "CUDA_VISIBLE_DEVICES",  # which GPU grading uses
    "LD_LIBRARY_PATH",  # where a system CUDA's libraries are
    "TMPDIR",  # where scratch folders go
)


def worker_environment() -> dict[str, str]:
    env = {name: os.environ[name] for name in WORKER_ENVIRONMENT if name in os.environ}
    env.update(
        PATH="/usr/local/bin:/usr/bin:/bin",
        LANG="C.UTF-8",
        # One intra-op thread per torch process, so workers do not fight over the cores.
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONPATH=str(PACKAGE_ROOT),
        # Ask NVML, not the CUDA driver, whether a GPU exists: the zygote is forked from the
        # worker, and CUDA initialised before a fork is unusable in every child.
        PYTORCH_NVML_BASED_CUDA_CHECK="1",
    )
    return env


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _ray_process_worker(config_json: str) -> GradingWorker:
    """This Ray worker process's warm grader.

    Ray reuses a worker process for many tasks, so keeping the grader here pays `import
    torch` and the fork server's start once per process, as the local workers do.
    """
    return GradingWorker(WorkerConfig.from_json(config_json))


def grade_in_ray(config_json: str, path: str) -> ReportData:
    """The body of one Ray task: grade one submission, return its report."""
    if not Path(path).exists():
        raise GraderError(
            f"{path} is not visible on this Ray node; `batch --executor ray` needs the "
            "submissions (and the course folder) at the same path on every node."
        )
    return _ray_process_worker(config_json).grade(Path(path))


def _ray_environment() -> dict[str, str]:
    """What Ray workers need from here: the course checkout, and the grader's own settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith("GRADER_")}
    env["PYTHONPATH"] = str(PACKAGE_ROOT)
    return env


class RayExecutor:
    """Ray tasks on an existing cluster (`address`), or on a local instance started here."""

    def __init__(
        self,
        config: WorkerConfig,
        assignment: Assignment,
        *,
        workers: int,
        address: str | None,
    ) -> None:
        self.config = config
        self.assignment = assignment
        self.workers = workers
        self.address = address

    def run(self, items: list[BatchItem], on_done: OnDone) -> None:
        ray = require_ray()
        ray.init(
            address=self.address,
            num_cpus=self.workers if self.address is None else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": _ray_environment()},
        )
        try:
            self._run(ray, items, on_done)
        finally:
            ray.shutdown()

    def _run(self, ray: Any, items: list[BatchItem], on_done: OnDone) -> None:
        device = self.config.device
        if device == "auto":
            device = "cuda" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
        config = replace(self.config, device=device)
        # A grading task is not idempotent enough to retry blindly: a crash is recorded.
        task = ray.remote(grade_in_ray).options(
            num_cpus=1, num_gpus=1 if device == "cuda" else 0, max_retries=0
        )
        pending = {task.remote(config.to_json(), str(item.path.resolve())): item for item in items}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                item = pending.pop(ref)
                try:
                    report = ray.get(ref)
                except Exception as error:  # a crashed worker or the grader's own failure
                    report = crashed_report(
                        self.assignment,
                        f"The Ray task grading this submission failed: {first_line(error)}",
                        seed=config.seed,
                        device=device,
                    )
                on_done(item, report)


def require_ray() -> Any:
    """The `ray` module, or a UsageError saying how to install it into this checkout's venv."""
    try:
        import ray
    except ImportError:
        python = Path(sys.executable)
        pip = python.with_name("pip")
        install = f"{pip} install -e '.[ray]'" if pip.exists() else f"{python} -m pip install ray"
        raise UsageError(
            f"--executor ray needs Ray, which is not installed for {python}. From the "
            f"checkout's folder ({PACKAGE_ROOT}): {install}  (or run without --executor ray "
            "to grade on this machine)."
        ) from None
    return ray


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:500] if text else type(error).__name__
