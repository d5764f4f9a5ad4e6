"""Run trusted-side work on student bytes (decoding, compiling, parsing) with bounds.

CPython's compiler and parser hold the GIL for as long as they like (one 1 MiB f-string took
minutes) and allocate as they like, so no timeout inside the grading process can stop them.
Each call therefore runs in a forked child with an address-space and CPU-time limit, read
back with a wall-clock deadline per task and killed when it passes. The child only runs the
given functions (never student code) and sends back JSON, so nothing it returns is
unpickled. Tasks share one child; after a task that times out or kills the child, the
remaining tasks go on in a fresh one, so a task costs only itself.

A batch reads each submission more than once (to see whether its report stands, then for
code similarity), and a hostile file costs its bound every time. Inside `remembering`,
tasks given a key (a digest of everything the task reads) pay their bound once: their
outcome is kept by that key, and failures can be kept on disk for the batch's next run.

Where `os.fork` does not exist (Windows, where only `check` and `submit` run, on the
student's own files), the tasks run inline, unbounded.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
import select
import signal
import struct
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.platform != "win32":
    import resource

# Address space a child may add to what it inherited from the forking process.
DEFAULT_MEMORY_BYTES = 1 << 30
MAX_RESULT_BYTES = 64 << 20
_LENGTH = struct.Struct("!Q")
_CHILD_FAILED = 70

TIMEOUT = "timeout"
OUT_OF_MEMORY = "memory"
CRASHED = "crashed"
# Remembered outcomes: every failure (each cost its whole bound) and every value whose task
# ran at least this long in its child. Quicker tasks cost less to run again than to hold.
REMEMBERED_AFTER_SECONDS = 0.5
_REMEMBERED_FORMAT = "torch-grader remembered bounded outcomes v1"
# The failures kept between runs: the bound itself was reached.
_KEPT_FAILURES = (TIMEOUT, OUT_OF_MEMORY)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What one task returned (a JSON value), or why it returned nothing."""

    value: Any = None
    # "", TIMEOUT, OUT_OF_MEMORY or CRASHED.
    failure: str = ""
    # How long the task ran in its child (0 for a failure): what remembering it saves.
    seconds: float = field(default=0.0, compare=False)


def content_key(kind: str, *parts: str | bytes) -> str:
    """A digest of what a bounded task reads, for `run_bounded`'s `keys`: `kind` names the task."""
    digest = hashlib.sha256()
    for part in (kind, *parts):
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


class RememberedOutcomes:
    """Outcomes of keyed bounded tasks, by their key and bounds (see `remembering`).

    `load` and `save` keep the overruns (time, memory) on disk between runs of one batch: a
    file that overran its bound once is not given the bound again until its content changes.
    A crashed child is remembered for the run only: a crash may be the grader's own fault.
    """

    def __init__(self, failures: dict[str, str] | None = None) -> None:
        self._outcomes = {key: Outcome(failure=why) for key, why in (failures or {}).items()}
        # What this run looked up or added: only these are saved, so the file never grows
        # with submissions that are gone.
        self._used: set[str] = set()

    def get(self, key: str) -> Outcome | None:
        outcome = self._outcomes.get(key)
        if outcome is not None:
            self._used.add(key)
        return outcome

    def keep(self, key: str, outcome: Outcome) -> None:
        if outcome.failure or outcome.seconds >= REMEMBERED_AFTER_SECONDS:
            self._outcomes[key] = outcome
            self._used.add(key)

    @classmethod
    def load(cls, path: Path) -> RememberedOutcomes:
        """The failures saved at `path` by the same grader version; none if unreadable."""
        from grader import __version__

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        if not (
            isinstance(data, dict)
            and data.get("format") == _REMEMBERED_FORMAT
            and data.get("grader_version") == __version__
            and isinstance(data.get("failures"), dict)
        ):
            return cls()
        kept = data["failures"].items()
        return cls({k: v for k, v in kept if isinstance(k, str) and v in _KEPT_FAILURES})

    def save(self, path: Path) -> None:
        from grader import __version__
        from grader.results.atomic import write_json_atomic

        failures = {
            key: outcome.failure
            for key, outcome in sorted(self._outcomes.items())
            if outcome.failure in _KEPT_FAILURES and key in self._used
        }
        data = {"format": _REMEMBERED_FORMAT, "grader_version": __version__, "failures": failures}
        try:
            write_json_atomic(path, data)
        except OSError as error:  # the next run pays the bounds again, nothing worse
            log.warning("could not keep the bounded checks' failures in %s: %s", path, error)


# The outcomes `run_bounded` keeps while a `remembering` block runs; outside one, none.
_REMEMBERED: ContextVar[RememberedOutcomes | None] = ContextVar("remembered", default=None)


@contextlib.contextmanager
def remembering(outcomes: RememberedOutcomes) -> Iterator[RememberedOutcomes]:
    """Within the block, keyed tasks of `run_bounded` run once per key and bounds."""
    token = _REMEMBERED.set(outcomes)
    try:
        yield outcomes
    finally:
        _REMEMBERED.reset(token)


def run_bounded(
    tasks: Sequence[Callable[[], Any]],
    *,
    seconds: float,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    keys: Sequence[str] | None = None,
) -> list[Outcome]:
    """Run each task (returning a JSON value) in a limited child, `seconds` of wall time each.

    `keys` (one per task, `content_key`) let a `remembering` block answer a task it has
    seen, with the same bounds, without running it again.
    """
    remembered = _REMEMBERED.get()
    if remembered is None or keys is None:
        return _run_all(tasks, seconds, memory_bytes)
    bounded = [f"{key} {seconds!r} {memory_bytes}" for key in keys]
    known = [remembered.get(key) for key in bounded]
    todo = [index for index, outcome in enumerate(known) if outcome is None]
    ran = _run_all([tasks[index] for index in todo], seconds, memory_bytes)
    for index, outcome in zip(todo, ran, strict=True):
        remembered.keep(bounded[index], outcome)
        known[index] = outcome
    return [outcome for outcome in known if outcome is not None]


def _run_all(
    tasks: Sequence[Callable[[], Any]], seconds: float, memory_bytes: int
) -> list[Outcome]:
    if not hasattr(os, "fork"):
        return [Outcome(value=task()) for task in tasks]
    outcomes: list[Outcome] = []
    while len(outcomes) < len(tasks):
        outcomes.extend(_run_in_child(tasks[len(outcomes) :], seconds, memory_bytes))
    return outcomes


def _run_in_child(
    tasks: Sequence[Callable[[], Any]], seconds: float, memory_bytes: int
) -> list[Outcome]:
    """Outcomes of a prefix of `tasks`: all of them, or up to and including the one that failed."""
    read_fd, write_fd = os.pipe()
    cpu_seconds = int(seconds * len(tasks)) + 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_fd)
        _child_main(tasks, write_fd, memory_bytes, cpu_seconds)
    os.close(write_fd)
    outcomes: list[Outcome] = []
    buffer = b""
    deadline = time.monotonic() + seconds
    failure = ""
    try:
        while len(outcomes) < len(tasks):
            while len(buffer) >= _LENGTH.size:
                (length,) = _LENGTH.unpack_from(buffer)
                if length > MAX_RESULT_BYTES or len(buffer) < _LENGTH.size + length:
                    break
                frame = buffer[_LENGTH.size : _LENGTH.size + length]
                buffer = buffer[_LENGTH.size + length :]
                outcomes.append(_decode(frame))
                deadline = time.monotonic() + seconds
            if len(outcomes) == len(tasks):
                break
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([read_fd], [], [], max(remaining, 0.0))
            if not ready:
                failure = TIMEOUT
                break
            chunk = os.read(read_fd, 1 << 20)
            if not chunk or len(buffer) > MAX_RESULT_BYTES:
                failure = CRASHED
                break
            buffer += chunk
    finally:
        os.close(read_fd)
        if failure:
            _kill(pid)
        status = _reap(pid)
    if failure:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            failure = TIMEOUT
        outcomes.append(Outcome(failure=failure))
    return outcomes


def _decode(frame: bytes) -> Outcome:
    message = json.loads(frame)
    if message.get("memory"):
        return Outcome(failure=OUT_OF_MEMORY)
    seconds = message.get("seconds")
    return Outcome(
        value=message.get("value"), seconds=float(seconds) if isinstance(seconds, float) else 0.0
    )


def _reap(pid: int) -> int:
    """The child's wait status; a crash's if something else in this process reaped it."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return signal.SIGKILL


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _child_main(
    tasks: Sequence[Callable[[], Any]], write_fd: int, memory_bytes: int, cpu_seconds: int
) -> None:  # pragma: no cover - runs in the forked child
    """Set the limits, run the tasks in order, send each result; never return."""
    status = _CHILD_FAILED
    try:
        # A collection would walk (and so copy) every page of the parent's heap; the child
        # lives for one batch of tasks and RLIMIT_AS bounds what it allocates anyway.
        gc.disable()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # The compiler warns once per occurrence, not once per place (`1is` 250,000 times in
        # a 1 MiB file: 15 MB of SyntaxWarnings), onto the grader's own stderr or log.
        warnings.simplefilter("ignore")
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        inherited = _address_space()
        if inherited:
            limit = inherited + memory_bytes
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for task in tasks:
            started = time.monotonic()
            try:
                message: dict[str, Any] = {"value": task()}
            except MemoryError:
                message = {"memory": True}
            message["seconds"] = time.monotonic() - started
            frame = json.dumps(message).encode()
            frame = _LENGTH.pack(len(frame)) + frame
            while frame:
                frame = frame[os.write(write_fd, frame) :]
        status = 0
    finally:
        os._exit(status)


def _address_space() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS counts), 0 where unknown (macOS)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
