"""Running grading workers (process.py): as local processes or as Ray tasks.

An executor hands each job's result to `on_done` as it arrives. A submission whose grading
failed (its worker died or hung, or the grader raised) still gets a result: a crashed one,
which says so. `grade_in_worker` is one submission in one local worker, as `grade` and
`gradescope` grade.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from grader.course.manifest import Assignment
from grader.course.root import PACKAGE_ROOT
from grader.errors import GraderError, UsageError
from grader.grading.devices import resolve_device
from grader.grading.grade import GradeSettings, crashed_result
from grader.grading.seeds import grading_seed
from grader.results.model import GradingResult
from grader.sandbox.jsonlines import JsonLines
from grader.sandbox.scratch import scratch_folder
from grader.sandbox.settings import BUDGET_OVERRIDE_ENV, TIMEOUT_OVERRIDE_ENV
from grader.workers.process import GradingWorker
from grader.workers.protocol import (
    MAX_REPLY_BYTES,
    SCRATCH_PREFIX,
    Job,
    ProtocolError,
    WorkerConfig,
    decode_result,
    encode_result,
)

log = logging.getLogger(__name__)

# A worker that holds one submission longer than this many times the student time a grade
# can take (each part's budget, `Limits.part_budget`) is stuck.
WATCHDOG_SLACK = 2
# Workers that die before grading anything, in a row, before the batch gives up.
MAX_FAILED_STARTS = 3
# How long an idle worker gets to shut its fork server down before it is killed.
STOP_TIMEOUT_S = 10.0
POLL_S = 5.0

EXECUTORS = ("local", "ray")
# What a coordinator is handed for each job: the job's key and the submission's result.
OnDone = Callable[[str, GradingResult], None]


class Executor(Protocol):
    """Grades submissions, handing each one's result to `on_done` as it arrives."""

    def run(self, jobs: Sequence[Job], on_done: OnDone) -> None: ...


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


def grade_in_worker(path: Path, assignment: Assignment, settings: GradeSettings) -> GradingResult:
    """`grade_submission` in a grading worker of its own, as `batch` grades.

    The worker forks the sandbox's zygote before it reads anything of this grade, so the
    trusted side and the sandbox share one `import torch` (most of a grade's cost on a small
    machine), and this process never imports torch. Always returns a result: a crashed one,
    which says why, if the worker could not grade.
    """
    seed = grading_seed(settings.seed)
    device = resolve_device(settings.device)
    results: list[GradingResult] = []
    try:
        with scratch_folder(SCRATCH_PREFIX) as scratch:
            hide = tuple(str(p) for p in settings.hide)
            config = WorkerConfig.for_assignment(
                assignment, device=device, seed=seed, hide=hide, scratch=str(scratch)
            )
            LocalExecutor(config, assignment, workers=1, log_dir=None).run(
                [Job(key=assignment.id, path=str(path.resolve()))],
                lambda _key, result: results.append(result),
            )
        return results[0]
    except Exception as error:  # the grader's own failure: say so in the result
        log.exception("grading failed")
        message = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        return crashed_result(assignment, message, seed=seed, device=device)


@dataclass
class _WorkerProcess:
    slot: int
    process: subprocess.Popen[bytes]
    ready: bool = False
    job: Job | None = None
    since: float = 0.0
    replies: JsonLines = field(default_factory=lambda: JsonLines(MAX_REPLY_BYTES))
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

    def run(self, jobs: Sequence[Job], on_done: OnDone) -> None:
        queue = deque(jobs)
        pool: list[_WorkerProcess] = []
        try:
            for slot in range(min(self.workers, len(jobs))):
                pool.append(self._start(slot))
            while queue or any(w.job for w in pool):
                self._step(pool, queue, on_done)
            for worker in pool:
                self._stop(worker)
        finally:
            for worker in pool:
                self._kill(worker)
            self._selector.close()

    def _step(self, pool: list[_WorkerProcess], queue: deque[Job], on_done: OnDone) -> None:
        """Hand out work, take in what came back, and replace the workers that died or hung."""
        for worker in pool:
            if worker.ready and worker.job is None and queue:
                self._assign(worker, queue.popleft())
        for worker, lines, ended in self._wait(pool):
            for message in lines:
                self._handle(worker, message, on_done, queue)
            if ended:
                pool[pool.index(worker)] = self._replace(worker, on_done, queue)
        for worker in pool:
            if worker.job and time.monotonic() - worker.since > self.watchdog_s:
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
                    "import sys; from grader.workers.process import serve_worker; "
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

    def _assign(self, worker: _WorkerProcess, job: Job) -> None:
        assert worker.process.stdin is not None
        worker.job, worker.since = job, time.monotonic()
        try:
            worker.process.stdin.write((json.dumps(job) + "\n").encode())
            worker.process.stdin.flush()
        except BrokenPipeError:
            pass  # its end shows up as end-of-file on the next wait

    def _wait(
        self, pool: list[_WorkerProcess]
    ) -> Iterator[tuple[_WorkerProcess, list[dict[str, Any]], bool]]:
        busy = [w.since for w in pool if w.job]
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
        queue: deque[Job],
    ) -> None:
        event = message.get("event")
        if event == "ready":
            worker.ready = True
            self._failed_starts = 0
        elif event == "failed":
            log.error("worker %d could not start: %s", worker.slot, message.get("message"))
        elif event == "done" and worker.job and message.get("key") == worker.job["key"]:
            job, worker.job = worker.job, None
            worker.graded += 1
            # The next submission first: recording this result (checked, written, printed)
            # would otherwise keep the worker, and so one core, idle.
            if queue:
                self._assign(worker, queue.popleft())
            on_done(job["key"], self._result(message))

    def _result(self, done: dict[str, Any]) -> GradingResult:
        """A `Done` reply's result, or a crashed one that says why there is none."""
        if "result" not in done:
            return self._crash(f"The grader failed: {done.get('error', 'no result')}")
        try:
            return decode_result(done["result"])
        except (ProtocolError, TypeError) as error:
            log.error("a worker's result does not decode: %s", error)
            return self._crash(f"The grader failed: its result does not decode ({error})")

    def _replace(
        self,
        worker: _WorkerProcess,
        on_done: OnDone,
        queue: deque[Job],
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
        if worker.job is not None:
            job, worker.job = worker.job, None
            on_done(
                job["key"],
                self._crash(
                    message
                    or f"The grading worker stopped (exit status {status}) while grading this "
                    "submission; its other submissions were not affected."
                ),
            )
        return self._start(worker.slot) if queue else worker

    def _crash(self, message: str) -> GradingResult:
        return crashed_result(
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
# here (a staff token named GRADER_... must not come along). The course folder travels in
# the worker's config.
WORKER_ENVIRONMENT = (
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


# -- Ray -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _ray_process_worker(config_json: str) -> GradingWorker:
    """This Ray worker process's warm grader.

    Ray reuses a worker process for many tasks, so keeping the grader here pays `import
    torch` and the fork server's start once per process, as the local workers do.
    """
    return GradingWorker(WorkerConfig.from_json(config_json))


def grade_in_ray(config_json: str, path: str) -> str:
    """The body of one Ray task: grade one submission, return its encoded result as JSON.

    As JSON text, as a local worker's reply carries it: Ray would carry the data as it is
    (tuples and all), and the coordinator reads a result from one format only.
    """
    if not Path(path).exists():
        raise GraderError(
            f"{path} is not visible on this Ray node; `batch --executor ray` needs the "
            "submissions (and the course folder) at the same path on every node."
        )
    return json.dumps(encode_result(_ray_process_worker(config_json).grade(Path(path))))


def _ray_environment() -> dict[str, str]:
    """What Ray workers need from here: the grader's checkout, and the grader's own settings."""
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

    def run(self, jobs: Sequence[Job], on_done: OnDone) -> None:
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
            self._run(ray, jobs, on_done)
        finally:
            ray.shutdown()

    def _run(self, ray: Any, jobs: Sequence[Job], on_done: OnDone) -> None:
        device = self.config.device
        if device == "auto":
            device = "cuda" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
        config = replace(self.config, device=device)
        # A grading task is not idempotent enough to retry blindly: a crash is recorded.
        task = ray.remote(grade_in_ray).options(
            num_cpus=1, num_gpus=1 if device == "cuda" else 0, max_retries=0
        )
        pending = {task.remote(config.to_json(), job["path"]): job["key"] for job in jobs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                key = pending.pop(ref)
                try:
                    result = decode_result(json.loads(ray.get(ref)))
                except Exception as error:  # a crashed worker or the grader's own failure
                    result = crashed_result(
                        self.assignment,
                        f"The Ray task grading this submission failed: {first_line(error)}",
                        seed=config.seed,
                        device=device,
                    )
                on_done(key, result)


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
