"""The grading worker: a warm process that grades one submission at a time (protocol.py)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from grader.course.manifest import load_assignment
from grader.grading.devices import resolve_device
from grader.grading.grade import (
    GradeSettings,
    configure_trusted_process,
    grade_submission,
    sandbox_settings,
)
from grader.grading.refcache import ReferenceCache
from grader.results.model import GradingResult
from grader.sandbox.heap import collapse_private_memory
from grader.sandbox.scratch import scratch_folder
from grader.workers.protocol import (
    SCRATCH_PREFIX,
    Done,
    Failed,
    Job,
    Ready,
    WorkerConfig,
    encode_result,
)

if TYPE_CHECKING:
    from grader.sandbox.client import Sandbox
    from grader.sandbox.zygote import PreforkedZygote

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


class GradingWorker:
    """One warm grading process: torch imported once, one fork server for every submission."""

    def __init__(self, config: WorkerConfig, *, preforked: PreforkedZygote | None = None) -> None:
        from grader.sandbox.client import Sandbox

        self.assignment = load_assignment(
            config.assignment, root=Path(config.course) / "assignments"
        )
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

    def grade(self, path: Path) -> GradingResult:
        if self.graded == 1:
            # This process forks a bounded child for every source test and submission check
            # (about 9 a submission): 19 ms each from 4 KiB pages, 7 ms from 2 MiB ones. The
            # collapse costs 0.35 CPU-s once, which a worker grading one submission (as
            # `grade` runs it) would not win back.
            collapse_private_memory()
        self.graded += 1
        return grade_submission(
            path,
            self.assignment,
            self.settings,
            sandbox=self.sandbox,
            reference_cache=self.reference_cache,
            bytecode_dir=self.bytecode_dir,
        )

    def close(self) -> None:
        self.sandbox.close()
        self._scratch.close()


def _die_with_parent(parent: int) -> None:
    """Exit when the coordinator does, even if it is killed without a chance to clean up."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the coordinator was already gone before the line above took effect


def serve_worker(parent: int) -> NoReturn:
    """A worker's main loop: a config line, then one job per line on stdin (protocol.py)."""
    # torch's import and warm-up leave some 300,000 long-lived objects, and a full collection
    # every few tens of thousands of new ones walked them all: 9 collections, 0.45 CPU-s of
    # a grade. `configure_trusted_process` collects once and freezes them instead.
    gc.disable()
    _die_with_parent(parent)
    # Replies go on a private copy of stdout; anything else printed lands in the worker log.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def reply(message: Ready | Failed | Done) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    # Nothing of the grade has been read yet (the coordinator gave us a scrubbed environment
    # and only its pid): the sandbox's zygote, forked now, shares our `import torch`.
    from grader.sandbox.zygote import PreforkedZygote

    configure_trusted_process(GradeSettings().threads)
    preforked = PreforkedZygote()
    config = WorkerConfig.from_json(sys.stdin.readline())
    try:
        worker = GradingWorker(config, preforked=preforked)
    except Exception as error:
        log.exception("worker start failed")
        reply(Failed(event="failed", message=f"{type(error).__name__}: {error}"))
        _exit_now(1)
    reply(Ready(event="ready"))
    try:
        for line in sys.stdin:
            job: Job = json.loads(line)
            done = Done(event="done", key=job["key"])
            try:
                done["result"] = encode_result(worker.grade(Path(job["path"])))
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
