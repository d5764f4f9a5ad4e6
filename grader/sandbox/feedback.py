"""What the student is told when their code produced no result: exit statuses and exceptions.

Every sentence here is for the student: what happened, and what to check. Nothing here
decides a score; the facts come from the server's `Exited` reply and the job's files.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.manifest import Limits
from grader.sandbox.protocol import EXIT_RAISED, EXIT_UNREPORTABLE, IMPORTED
from grader.sandbox.wire import decode_result, short_message

MAX_ERROR_BYTES = 64 * 1024
# Seconds of CPU time allowed on top of the wall time (the limit is a backstop for spinning).
CPU_GRACE_S = 2


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
        exit_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message
        self.detail = detail
        self.output = output or StudentOutput()
        self.at_import = at_import
        # The process's exit status when it exited on its own without a result: a probe can
        # end the process on purpose (code hidden in a file ran), which nothing can undo.
        self.exit_status = exit_status


def read_capped(path: Path, limit: int) -> str:
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


def interpret(
    summary: dict[str, Any] | None,
    *,
    job_dir: Path,
    module: str,
    limits: Limits,
    elapsed: float,
) -> Any:
    """The job's decoded result, or the StudentFailure that says why there is none.

    `summary` is the server's `Exited` reply, already checked to be one (None when the
    client's backstop had to kill the job).
    """
    limit = limits.max_output_kb * 1024
    # The monitor already trimmed these; the cap here only guards against a broken monitor.
    output = StudentOutput(
        stdout=read_capped(job_dir / "stdout.txt", limit + 200),
        stderr=read_capped(job_dir / "stderr.txt", limit + 200),
    )
    imported = IMPORTED in _read_small(job_dir / "progress")
    file_name = f"{module}.py"
    if summary is None or summary.get("timed_out"):
        where = "running your code" if imported else f"importing {file_name}"
        raise StudentFailure(
            "timeout",
            f"Stopped after {limits.timeout_s:g} s while {where}. Look for an "
            "infinite loop, a sleep, or far more work than asked (e.g. too many steps); "
            "code at the top level of your file runs on import.",
            output=output,
            at_import=not imported,
        )
    if type(summary.get("gpu_memory_mb")) is int:
        raise StudentFailure(
            "error",
            f"Your code used {summary['gpu_memory_mb']} MB of GPU memory and was stopped (the "
            f"limit is {limits.memory_mb} MB, plus what CUDA itself needs). "
            "Check for tensors far larger than the inputs, or ones kept from earlier steps.",
            output=output,
            at_import=not imported,
        )
    status = int(summary["status"])
    error_file = job_dir / "error.json"
    result_file = job_dir / "result.bin"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and _size(result_file) > 0:
        try:
            return decode_result(result_file)
        except Exception as error:
            raise StudentFailure(
                "error",
                "Your code's result could not be read as plain data (tensors, numbers, "
                f"lists, dicts): {short_message(error)}",
                detail=repr(error),
                output=output,
            ) from None
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_RAISED and _size(error_file) > 0:
        raise _student_exception(error_file, file_name, output, limits)
    raise StudentFailure(
        "error",
        explain_exit(status, file_name, limits, elapsed),
        detail=f"raw wait status {status}",
        output=output,
        at_import=not imported,
        exit_status=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    )


def _student_exception(
    error_file: Path, file_name: str, output: StudentOutput, limits: Limits
) -> StudentFailure:
    """The student's exception (error.json, written in the student process) in a sentence."""
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
    where = f" (line {line} of {file_name})" if type(line) is int else ""
    if kind == "NotImplementedError" and where:
        text = f"Not implemented yet: {message or 'NotImplementedError'}{where}."
    elif phase == "import":
        text = f"{file_name} failed to import: {kind}: {message}{where}."
    elif phase == "output":
        text = f"Your function returned something that cannot be graded: {message}."
    elif kind in ("SystemExit", "KeyboardInterrupt"):
        text = f"Your code raised {kind}{where}; never call sys.exit() or exit() in a submission."
    elif kind == "MemoryError":
        text = (
            f"Your code ran out of memory{where} (limit {limits.memory_mb} MB). "
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


def _read_small(path: Path, limit: int = 64) -> bytes:
    """The first `limit` bytes of a file the server wrote, or b"" where there is none."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def explain_exit(status: int, file_name: str, limits: Limits, elapsed: float) -> str:
    """Why the student process ended without a result or an error report, for the student."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return (
                f"Your code used more than {limits.timeout_s + CPU_GRACE_S:g} s of CPU time and "
                "was stopped."
            )
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
    if code == EXIT_UNREPORTABLE:
        return (
            "Your code failed, and its error could not even be reported: does "
            f"{file_name} replace built-in functions or modules?"
        )
    return (
        f"Your code ended the process (exit status {code}) before returning a result. Do not "
        f"call sys.exit(), exit() or os._exit() in {file_name}."
    )
