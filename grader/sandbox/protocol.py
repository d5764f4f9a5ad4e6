"""The protocol between the sandbox's two sides: every message, and the constants both read.

The client (`client.py`) imports this module as `grader.sandbox.protocol`; the server
(`server.py`, run as a script with `python -I`, outside the package) loads it by path. So it
imports only the standard library, and holds nothing but data shapes and constants.

Every message is one JSON object on one line, except the submission request, which also
carries one descriptor (SCM_RIGHTS).

The zygote (the process `python -I server.py` starts; its stdin is a unix socket):

- client -> zygote, on the socket: `Config`, once; then a `SubmissionRequest` per
  submission, carrying the far end of a new socket, that submission's channel;
- zygote -> client, on its stdout: `Ready`, once, after the warm-up and the start-up probe;
  then `Forked` (or `Refused`) per request.

A submission's server (forked by the zygote, speaking on the channel it was handed):

- client -> server: a `Job` per probe run;
- server -> client: `Started` when the job's student process exists, then `Exited` when it
  has ended and everything it started has been killed.

Inside a job, the student process tells its monitor how its isolation went (`SetupReport`,
on a pipe) before any student code runs; it reaches the client inside `Exited`. A job's
outputs are files in its folder: `result.bin` (the wire format below, read by `wire.py`),
`error.json` (`StudentError`), `progress`, `stdout.txt` and `stderr.txt`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

# The result's wire format: a 4-byte little-endian header length, a JSON header {"version",
# "value"}, then every tensor's bytes (written by the server's `_encode_result`).
WIRE_VERSION = 1
# The header holds a result's numbers, strings and structure; tensors travel as raw bytes
# after it. Probes' headers are a few KB. The trusted side copies every string of it several
# times (JSON, the test's assertion message, pytest's report), so this bounds what a result
# of long text costs the grading process: 2 MiB is at most 4 MB per copy, against 30 MB for
# a 15 MB string (and Gradescope's machine has 768 MB).
MAX_RESULT_HEADER_BYTES = 2 * 1024 * 1024


def header_too_long(header_size: int) -> str:
    """What a student reads when a result's header is over MAX_RESULT_HEADER_BYTES."""
    return (
        f"the result holds {header_size / 2**20:.1f} MiB of text, numbers and lists outside "
        f"tensors, over the {MAX_RESULT_HEADER_BYTES >> 20} MiB cap; return long data as "
        "tensors, and only what the function's contract asks for"
    )


# The tensor dtypes the wire format carries (torch's names without "torch.").
WIRE_DTYPES = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"}
    | {"float64", "complex64", "complex128"}
)
# Exit statuses of the student process that carry meaning (anything else is the student's):
# it raised (error.json says what), its error could not even be written, its setup failed.
EXIT_RAISED, EXIT_UNREPORTABLE, EXIT_SETUP = 2, 3, 4
# What the student process writes to its progress file: once its set-up is done and the
# student's code may start (its module's top level), then once that module is imported. An
# EXIT_SETUP with neither is the set-up's failure, the grader's; after them it is the student's.
STARTED, IMPORTED = b"started\n", b"imported\n"
# RLIMIT_NOFILE of the student process.
MAX_OPEN_FILES = 256
# The protections the start-up probe looks for; every later job must get all that it found.
PROBED = (
    "landlock",
    "seccomp",
    "pid_namespace",
    "network_isolated",
    "ipc_isolated",
    "read_only_filesystem",
    "private_proc",
    "private_tmp",
    "paths_hidden",
    "minimal_view",
)


class LimitsConfig(TypedDict):
    """Per-job resource limits, in the units the kernel calls take."""

    timeout_s: float
    cpu_s: int
    memory_mb: int
    max_processes: int
    max_file_mb: int
    # The size of each private tmpfs (/tmp, /var/tmp, /dev/shm, the work folder).
    tmp_mb: int
    # Per stream (stdout, stderr): the monitor keeps a head and a tail this long in all.
    max_output_bytes: int


class Config(TypedDict):
    """The client's settings for one sandbox: the first line on the zygote's socket."""

    threads: int
    # "cpu" or "cuda".
    device: str
    limits: LimitsConfig
    # Paths student code must not see (solutions, results, Gradescope metadata).
    hide: list[str]
    # World-writable folders each job gets as a private, empty tmpfs.
    private_dirs: list[str]
    # The job folder of the start-up probe (which runs no student code).
    probe_dir: str
    # The sandbox's work folder (the server's cwd): jobs/, shared/, server.log.
    workdir: str
    # The client's pid: the zygote exits at once if its parent is no longer that process.
    parent: int
    # The sandbox's own uid and gid (None when the grader is not root: no change of user).
    uid: int | None
    gid: int | None
    # The server's whole environment (a forked zygote replaces the one it inherited).
    environment: dict[str, str]


class Ready(TypedDict):
    """The zygote is warm and has probed what this machine allows."""

    event: Literal["ready"]
    torch: str
    warm_up_s: float
    # One flag per name in PROBED, and "separate_user".
    protections: dict[str, bool]
    # "nvml-watchdog", "in-process only" or "none (cpu)".
    gpu_memory_cap: str


class SubmissionRequest(TypedDict):
    """Fork a server for the next submission; it comes with that submission's socket."""

    # Probe files (course code) for the zygote to import once for every later server.
    probe_files: list[str]


class Forked(TypedDict):
    event: Literal["forked"]
    pid: int


class Refused(TypedDict):
    event: Literal["refused"]
    why: str


class _JobRequired(TypedDict):
    id: int
    job_dir: str
    timeout_s: float
    # The student's module (its file is `module + ".py"`); None for the start-up probe.
    module: str | None


class Job(_JobRequired, total=False):
    """Run `probe(module, **kwargs)` once, in a fresh student process.

    The kwargs are in `job_dir/input.pkl`, written by the client (pickled because they
    travel only towards the student side, never back). Only the start-up probe, which the
    server makes for itself, leaves out the optional keys.
    """

    # The files its module can import (its own and those it imports), and the probe file.
    submission_dir: str
    probe_file: str
    probe: str
    # False: run `probe(None, **kwargs)` and never import the student's module (its
    # `submission_dir` is then empty): a job that judges an artifact the student's code made
    # (an exported program's bytes) where no student code has run. True when absent.
    import_student: bool


class Started(TypedDict):
    event: Literal["started"]
    id: int
    # The student process (pid 1 of its namespace where there is one): the client kills its
    # process group if the monitor misses the deadline.
    pid: int


class SetupReport(TypedDict, total=False):
    """What the student process did before any student code (on a pipe to its monitor)."""

    # Each protection's flag, and "home", the student's home folder.
    setup: dict[str, bool | str]
    # Why the job was not run (a protection the probe found is missing, or isolation failed).
    refused: str


class Exited(SetupReport, total=False):
    """The job's end, with its setup report; its outputs are files in the job folder."""

    event: Literal["exited"]
    id: int
    # The student process's raw wait status (os.WIFEXITED and so on decode it).
    status: int
    # Killed at the wall-time deadline.
    timed_out: bool
    wall_s: float
    stdout_bytes: int
    stderr_bytes: int
    # Present when the GPU watchdog killed the job: the job's GPU memory in MiB.
    gpu_memory_mb: int


class StudentError(TypedDict):
    """What the student's code raised (`error.json`), with exit status EXIT_RAISED."""

    # "import" (the student's file), "run" (the probe) or "output" (encoding the result).
    phase: str
    type: str
    message: str
    # The last line of the traceback in the student's file, if any.
    line: int | None
    traceback: str
