"""The student side: a fork server that runs probes against student code, one process per job.

Started as `python -I server.py` (zygote.py's `start_zygote`), or forked by a grading worker
that has imported torch and holds nothing secret yet (zygote.py's `PreforkedZygote`, sharing
that import), and given a scrubbed environment either way.
It imports only the standard library and torch (never the grader package), imports torch
once, triggers torch's lazy imports once, and then forks one fresh *student process* per
job, which before any student code:

- becomes pid 1 of a fresh pid namespace (where the kernel allows it), so that its end is
  the end of every process the student started, double-forked daemons included;
- enters fresh network, IPC and mount namespaces, remounts the whole file system
  read-only, covers every non-system top-level folder and /tmp, /var/tmp and /dev/shm
  with empty tmpfs mounts (putting back only Python, torch and its job folder), mounts a
  /proc of its own, and hides the paths the trusted side names;
- sets resource limits, becomes the sandbox's unprivileged uid (when we are root) with no
  groups and no capabilities, and forbids gaining privileges;

then imports the student's file, runs the probe, and writes plain data back through
descriptors the server opened, because it can neither see nor write its job folder.

The server is also each job's monitor: it drains the student's stdout and stderr through
pipes into a bounded head and tail, kills the student process at the wall-time deadline,
and, being a child subreaper, kills and reaps whatever is left below it after each job.

Nothing here decides a score: the trusted side only believes what it can check. Every step
that fails is reported, never hidden: `ready` carries what this machine allows, and a job
that cannot get a protection the start-up probe had is refused rather than run with less.

The process started is a zygote: it imports torch, shapes the view, probes the protections
and then never holds any submission's data. Each submission gets a server of its own,
forked from the zygote, which does all of the above for that submission's jobs and is
killed when the next submission starts; so no student process's memory ever held another
submission's files, output or messages.

The protocol with the client (client.py) is protocol.py's: the `Config` on our stdin (a
unix socket), `Ready` on our stdout, then a `SubmissionRequest` with a socket for each
submission, answered with `Forked`; on that socket, a `Job` answered with `Started` and
`Exited`. protocol.py and confine.py are loaded by path: we run outside the package.
What the server holds besides the `Config` is a `ServerState`.

Why one file: it is the script `python -I` runs, outside the package (so
that the student process inherits no grader code and nothing of the grader is importable
from it), and every part of it runs in the zygote, a submission's server or the student
process, in the order the module docstring gives. Its stdlib-only helpers that are not
about the process tree (the messages, Landlock and seccomp) are already modules of their
own, loaded by path.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import importlib.util
import json
import os
import pickle
import re
import resource
import select
import signal
import socket
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, cast


def _no_breakpoint(*args: Any, **kwargs: Any) -> None:
    """sys.breakpointhook in a student process."""


def _load_module(name: str, path: str) -> Any:
    """Import the file at `path` as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _sibling(name: str) -> Any:
    """One of the package's stdlib-only modules beside this file, loaded by path (we run
    outside the package, with `python -I`, so it cannot be imported by name)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return _load_module(f"sandbox_{name}", os.path.join(here, f"{name}.py"))


if TYPE_CHECKING:
    from grader.sandbox import artifacts, heap, numerics, protocol
    from grader.sandbox.protocol import Config, Job, LimitsConfig
else:
    protocol = _sibling("protocol")
    artifacts = _sibling("artifacts")
    heap = _sibling("heap")
    numerics = _sibling("numerics")

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000
MNT_DETACH = 2
MOUNT_OPTION_FLAGS = {
    "ro": MS_RDONLY,
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MAX_MESSAGE_CHARS = 4000
MAX_TRACEBACK_CHARS = 6000
# Top-level folders of the operating system; every other one is covered by an empty tmpfs.
# /run is not one of them: it holds the host's service sockets (D-Bus, systemd-resolved),
# which a unix socket reaches from inside an empty network namespace.
SYSTEM_TOP_DIRS = frozenset(
    {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys"}
    | {"var", "tmp"}
)
# What Landlock leaves readable besides Python, torch and the job: the operating system.
# (/dev is a rule of its own in confine.py; /run, /var and /tmp are not needed.)
CONFINED_SYSTEM_DIRS = (
    *("bin", "sbin", "lib", "lib32", "lib64", "libx32"),
    *("usr", "etc", "proc", "sys"),
)
# Pseudo file systems the student needs as they are (/dev/null, /proc/self, ...).
LIVE_TREES = ("/proc", "/sys", "/dev")
# The student's descriptors: 0-2 are stdio; these three lead to files in the job folder.
RESULT_FD, ERROR_FD, PROGRESS_FD = 3, 4, 5
# The server's pidfd, kept only until the student process runs as the sandbox uid.
SERVER_FD = 6
# Shared with the client (protocol.py): what exit statuses mean, the probed protections,
# the result's wire format.
EXIT_RAISED, EXIT_UNREPORTABLE, EXIT_SETUP = (
    protocol.EXIT_RAISED,
    protocol.EXIT_UNREPORTABLE,
    protocol.EXIT_SETUP,
)
STARTED, IMPORTED = protocol.STARTED, protocol.IMPORTED
MAX_OPEN_FILES = protocol.MAX_OPEN_FILES
PROBED = protocol.PROBED
WIRE_VERSION, WIRE_DTYPES = protocol.WIRE_VERSION, protocol.WIRE_DTYPES
# NVML's status codes, and its "not available" for a process's memory.
NVML_SUCCESS, NVML_ERROR_INSUFFICIENT_SIZE = 0, 7
NVML_VALUE_NOT_AVAILABLE = (1 << 64) - 1
# How often the monitor reads a GPU job's memory through NVML.
GPU_WATCH_INTERVAL_S = 0.1
# What NVML counts for a process beyond torch's allocator: the CUDA context and its kernels.
GPU_CONTEXT_ALLOWANCE_MB = 1024
# How long the monitor keeps reading output after the student side is gone.
DRAIN_GRACE_S = 1.0


@dataclass
class ServerState:
    """What the server holds besides the client's `Config`, built up as it starts.

    One per process: a submission's server, forked from the zygote, changes its own copy.
    """

    config: Config
    # The zygote's pid: a submission's server exits if its parent is no longer that one.
    zygote: int = 0
    # The top-level folders that a view covers with an empty tmpfs (all but the system's).
    cover: list[str] = field(default_factory=list)
    # A pidfd of the jobs' monitor (this process), readable once it has died.
    server_pidfd: int = -1
    # Processes and threads of our uid before any job (RLIMIT_NPROC counts them all when we
    # are not root, so a job's limit goes on top); None as root.
    nproc_baseline: int | None = None
    # What the covers must leave visible: the interpreter and its libraries, torch.
    keep: list[str] = field(default_factory=list)
    # confine.py, loaded by path.
    confine: Any = None
    # The protections the server's own view already gives (None: each job shapes it all).
    view: dict[str, Any] | None = None
    # The server already left the network, and every job with it.
    server_offline: bool = False
    # Reads a GPU job's memory from outside it (None on CPU, or without NVML).
    gpu_memory: Any = None
    # Sends a message to the client on the submission's channel (none before there is one:
    # the start-up probe's "started" is for no one).
    reply: Callable[[Mapping[str, object]], None] = lambda message: None
    # What the start-up probe got: a job that cannot get all of it is refused.
    require: list[str] = field(default_factory=list)
    # Probe files imported once, by path (None: it failed, each job imports it and reports).
    probe_modules: dict[str, Any] = field(default_factory=dict)


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            os.fsencode(source),
            os.fsencode(target),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _write_file(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


# -- isolation (in the student process, before any student code) -------------------------------


def _mount_points() -> list[tuple[str, int]]:
    """Every mount point with its per-mount flags, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 6:
                continue
            # The kernel writes space, tab, newline and backslash as octal escapes (\040).
            path = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            flags = 0
            for option in fields[5].split(","):
                flags |= MOUNT_OPTION_FLAGS.get(option, 0)
            points.append((path, flags))
    return points


def _make_read_only() -> bool:
    """Remount every file system read-only in our mount namespace (pseudo file systems aside)."""
    done = True
    for path, flags in _mount_points():
        if any(_inside(path, tree) for tree in LIVE_TREES):
            continue
        try:
            # Keep the mount's own flags: a user namespace may not clear nosuid, nodev, ...
            _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError:
            done = False
    return done


def _isolate(state: ServerState, job_paths: list[str]) -> dict[str, Any]:
    """New network, IPC and mount namespaces, and a reduced view of the file system."""
    done: dict[str, Any] = {
        "pid_namespace": os.getpid() == 1,
        "network_isolated": state.server_offline or _libc.unshare(CLONE_NEWNET) == 0,
        "ipc_isolated": _libc.unshare(CLONE_NEWIPC) == 0,
        "read_only_filesystem": False,
        "private_proc": False,
        "private_tmp": False,
        "paths_hidden": False,
        "minimal_view": False,
        "home": "",
    }
    if _libc.unshare(CLONE_NEWNS) != 0:
        return done
    # The server's own view (when it could shape one) is already private and read-only, with
    # the covers and hidden paths in place: a copy of it needs only this job's own parts.
    view = state.view
    if view is None:
        try:
            _mount("none", "/", None, MS_REC | MS_PRIVATE)
        except OSError:
            return done
    else:
        done.update(view)
    if done["pid_namespace"]:
        # A /proc of the new pid namespace: the student sees its own processes and no others
        # (not the grader's command line, environment or open files).
        with contextlib.suppress(OSError):
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            done["private_proc"] = True
    done.update(_shape_job_view(state, [*state.keep, *job_paths], whole=view is None))
    return done


def _shape_server_view(state: ServerState) -> dict[str, Any]:
    """Shape the server's own (fresh, private) mount namespace; say what was done.

    Remount everything read-only, cover every non-system top-level folder, hide the hidden
    paths; then put back, read-only, the folders a cover hid that jobs need (the interpreter,
    torch), and the server's work folder as it was (raises if that cannot be put back).
    """
    done: dict[str, Any] = {"read_only_filesystem": _make_read_only()}
    keep = _real_dirs(state.keep)
    writable = [os.path.realpath(state.config["workdir"])]
    handles = _open_dirs(keep + writable)
    covered, view_ok = _cover_top_level(state)
    for path in writable:
        # Read-only since the remount above: put back as it was, above any cover.
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{handles[path]}", path, None, MS_BIND | MS_REC)
        _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    kept_view, _ = _put_back(keep, handles, private_mounted=[], covered=covered)
    _close_all(handles)
    _seal_covers(state, covered, view_ok=view_ok and kept_view, done=done)
    return done


def _shape_job_view(state: ServerState, read_only: list[str], *, whole: bool) -> dict[str, Any]:
    """Shape a job's (fresh, private) mount namespace; say what was done.

    Fresh tmpfs mounts on the world-writable folders, and a home in the first of them. The
    namespace is a copy of the server's, already shaped (see `_shape_server_view`), unless
    `whole`: where the server has no view of its own, the job also does all that the server
    would have done, in the same order. Then the `read_only` folders (the interpreter,
    torch, the job's folders) that a cover or a tmpfs hid are put back, read-only.
    """
    done: dict[str, Any] = {}
    if whole:
        done["read_only_filesystem"] = _make_read_only()
    keep = _real_dirs(read_only)
    handles = _open_dirs(keep)
    private_mounted, done["private_tmp"] = _mount_private_dirs(state)
    covered, view_ok = _cover_top_level(state) if whole else ([], True)
    kept_view, kept_private = _put_back(
        keep, handles, private_mounted=private_mounted, covered=covered
    )
    if not kept_private:
        done["private_tmp"] = False
    _close_all(handles)
    if whole:
        _seal_covers(state, covered, view_ok=view_ok and kept_view, done=done)
    if private_mounted:
        home = os.path.join(private_mounted[0], "home")
        os.mkdir(home, 0o700)
        uid, gid = state.config.get("uid"), state.config.get("gid")
        if uid is not None and gid is not None:
            os.chown(home, uid, gid)
        done["home"] = home
    return done


def _real_dirs(paths: list[str]) -> list[str]:
    return sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})


def _open_dirs(paths: list[str]) -> dict[str, int]:
    """A handle on each folder as it is now, to bind it back once covers have hidden it."""
    return {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in paths}


def _close_all(handles: dict[str, int]) -> None:
    for handle in handles.values():
        os.close(handle)


def _mount_private_dirs(state: ServerState) -> tuple[list[str], bool]:
    """An empty, size-capped tmpfs on each world-writable folder: those mounted, and whether
    every one that exists got one."""
    private_ok = True
    private_mounted: list[str] = []
    tmp_mb = int(state.config["limits"]["tmp_mb"])
    for path in state.config["private_dirs"]:
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        try:
            options = f"size={tmp_mb}m,nr_inodes=16384,mode=1777"
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, options)
            private_mounted.append(path)
        except OSError:
            private_ok = False
    return private_mounted, private_ok and bool(private_mounted)


def _cover_top_level(state: ServerState) -> tuple[list[str], bool]:
    """Cover every folder outside the system's own (home folders, the course, other
    submissions), so there is nothing to search for: the folders covered, and whether every
    cover took. Made read-only by `_seal_covers`, once the paths to keep are back."""
    covered: list[str] = []
    view_ok = True
    for path in state.cover:
        try:
            if os.path.islink(path):
                continue
            if os.path.isdir(path):
                _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
                covered.append(path)
            elif os.path.isfile(path):
                _mount("/dev/null", path, None, MS_BIND)
        except OSError:
            view_ok = False
    return covered, view_ok


def _put_back(
    keep: list[str], handles: dict[str, int], *, private_mounted: list[str], covered: list[str]
) -> tuple[bool, bool]:
    """Put each kept folder that a cover or a private tmpfs hid back at its path, read-only.

    One that cannot be put back is uncovered instead (without it the student could not even
    import), and leaves `covered` or `private_mounted`: returns whether no cover and no
    private tmpfs had to go.
    """
    view_ok = private_ok = True
    for path in keep:
        trees = [t for t in private_mounted + covered if _inside(path, t) and path != t]
        if not trees:
            continue
        try:
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{handles[path]}", path, None, MS_BIND | MS_REC)
            _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        except OSError:
            for tree in trees:
                _check(_libc.umount2(os.fsencode(tree), MNT_DETACH), f"uncover {tree}")
                if tree in covered:
                    covered.remove(tree)
                    view_ok = False
                else:
                    private_mounted.remove(tree)
                    private_ok = False
    return view_ok, private_ok


def _seal_covers(
    state: ServerState, covered: list[str], *, view_ok: bool, done: dict[str, Any]
) -> None:
    """Make the covers read-only and hide the hidden paths; record both in `done`."""
    for path in covered:
        _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    done["minimal_view"] = view_ok
    done["paths_hidden"] = _hide(state.config["hide"])


def _hide(paths: list[str]) -> bool:
    """Cover each path with an empty read-only tmpfs (a folder) or /dev/null (a file)."""
    hidden = True
    for path in paths:
        try:
            if os.path.isdir(path):
                _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
            elif os.path.lexists(path):
                _mount("/dev/null", path, None, MS_BIND)
        except OSError:
            hidden = False
    return hidden


def _leave_the_network() -> bool:
    """Move the server, and so every job it forks, into a network namespace of its own.

    Its only device is a loopback that is down: no address, no route, nothing to reach.
    One namespace serves every job (one each would have the kernel tear a namespace down
    after every job): an unprivileged user can leave nothing in it
    that outlives its processes (sockets close with them; devices, addresses, routes and
    firewall rules need privileges it lacks). As root only, like `_server_view`.
    """
    return os.geteuid() == 0 and _libc.unshare(CLONE_NEWNET) == 0


def _server_view(state: ServerState) -> dict[str, Any] | None:
    """Shape the server's own view once (read-only, covered, hidden; its work folder
    writable), so that each job copies it and adds only its private parts rather than
    shaping the whole view each time. As root only: a user could get a mount
    namespace only inside a user namespace, which the server could not leave again.
    """
    if os.geteuid() != 0:
        return None
    original = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    try:
        if _libc.unshare(CLONE_NEWNS) != 0:
            return None
        try:
            _mount("none", "/", None, MS_REC | MS_PRIVATE)
            return _shape_server_view(state)
        except OSError:
            traceback.print_exc()  # for staff, in the server's log; each job shapes it all
            _check(_libc.setns(original, CLONE_NEWNS), "return to the original mount namespace")
            return None
    finally:
        os.close(original)


# -- the student process -----------------------------------------------------------------------


def _cap_gpu_memory(torch: Any, memory_mb: int) -> None:
    """Cap torch's CUDA allocator for this test: past it, allocations raise OutOfMemoryError.

    This initialises CUDA in the forked child, which is allowed because the server never
    touched CUDA itself (RLIMIT_AS cannot be used on GPU runs: CUDA reserves huge address
    ranges).
    """
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, memory_mb * 2**20 / total), 0)


class _ProcessInfo(ctypes.Structure):
    """NVML's nvmlProcessInfo_t (the v2 and v3 calls share it)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("used_gpu_memory", ctypes.c_ulonglong),
        ("gpu_instance_id", ctypes.c_uint),
        ("compute_instance_id", ctypes.c_uint),
    ]


class _NvmlReader:
    """GPU memory per process, as the driver counts it, through libnvidia-ml (NVML).

    Read from outside the student process, so nothing the student's code does to torch's
    allocator (raising its memory fraction again, say) changes what is seen.
    """

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != NVML_SUCCESS:
            raise OSError("NVML did not initialise")
        count = ctypes.c_uint(0)
        if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != NVML_SUCCESS or not count.value:
            raise OSError("NVML found no GPU")
        self.devices = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                self.devices.append(handle)
        self.running: Any = getattr(self.lib, "nvmlDeviceGetComputeRunningProcesses_v3", None)
        if self.running is None:
            self.running = self.lib.nvmlDeviceGetComputeRunningProcesses_v2

    def processes(self) -> dict[int, int]:
        """Bytes of GPU memory used per pid, over every device."""
        used: dict[int, int] = {}
        for handle in self.devices:
            count = ctypes.c_uint(64)
            while True:
                infos = (_ProcessInfo * count.value)()
                status = self.running(handle, ctypes.byref(count), infos)
                if status != NVML_ERROR_INSUFFICIENT_SIZE:
                    break
                count = ctypes.c_uint(count.value + 16)
            if status != NVML_SUCCESS:
                continue
            for info in infos[: count.value]:
                if info.used_gpu_memory != NVML_VALUE_NOT_AVAILABLE:
                    used[info.pid] = used.get(info.pid, 0) + info.used_gpu_memory
        return used


def _open_gpu_memory_reader(device: str) -> _NvmlReader | None:
    """NVML where a job may use a GPU and the driver's library is there; else None."""
    if device != "cuda":
        return None
    try:
        return _NvmlReader()
    except (OSError, AttributeError):
        return None


def _gpu_memory_cap(device: str, gpu_memory: _NvmlReader | None) -> str:
    """How a job's GPU memory is capped (environment.sandbox.gpu_memory_cap)."""
    if device != "cuda":
        return "none (cpu)"
    return "nvml-watchdog" if gpu_memory is not None else "in-process only"


def _in_job(pid: int, student: int) -> bool:
    """Whether `pid` is the student process or one it started (its pid namespace or session)."""
    if pid == student:
        return True
    try:
        theirs = os.readlink(f"/proc/{pid}/ns/pid")
        job = os.readlink(f"/proc/{student}/ns/pid")
        if job != os.readlink("/proc/self/ns/pid"):
            return theirs == job
        return os.getsid(pid) == student
    except OSError:
        return False


def _gpu_memory_over_cap(
    reader: Any, student: int, cap_bytes: int, belongs: Any = _in_job
) -> int | None:
    """The job's GPU memory in bytes if it is over `cap_bytes`, else None.

    `reader.processes()` gives bytes per pid for every process on the GPU (the trusted
    side's reference runs there too); only the job's own processes count.
    """
    used = sum(size for pid, size in reader.processes().items() if belongs(pid, student))
    return used if used > cap_bytes else None


def _set_limits(limits: LimitsConfig, *, device: str) -> None:
    def cap(kind: int, value: int) -> None:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    cap(resource.RLIMIT_CPU, int(limits["cpu_s"]))
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * 1024 * 1024)
    cap(resource.RLIMIT_NOFILE, MAX_OPEN_FILES)
    if device == "cpu":
        # The address-space cap counts what torch already mapped, so it is added on top.
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        cap(resource.RLIMIT_AS, mapped + int(limits["memory_mb"]) * 1024 * 1024)
    # A file over the size cap should fail the write, not kill the process silently.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _drop_privileges(state: ServerState) -> None:
    """Become the sandbox uid (when root) and give up every capability and privilege gain."""
    uid, gid = state.config.get("uid"), state.config.get("gid")
    limits = state.config["limits"]
    if os.geteuid() == 0 and uid is not None and gid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        # Counted per uid, and the uid is this sandbox's alone: a fork bomb stops here.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)
    else:
        # In a user namespace of our own we still hold capabilities over it: drop them all.
        for number in range(64):
            _libc.prctl(PR_CAPBSET_DROP, number, 0, 0, 0)
        _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
        _libc.capset(ctypes.byref(header), (_CapData * 2)())
        nproc = int(limits["max_processes"]) + (state.nproc_baseline or 0)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def _encode_result(value: Any, torch: Any) -> bytes:
    """The result in the wire format the trusted side reads without any unpickler.

    A 4-byte little-endian header length, a JSON header {"version", "value"}, then every
    tensor's bytes. In the header, None, bools, ints, floats and strings are themselves;
    lists, tuples, dicts and tensors are tagged: {"list": [...]}, {"tuple": [...]},
    {"dict": {...}}, {"tensor": {"dtype", "shape", "device", "offset", "nbytes"}}.
    Anything else is refused with a message that names where it is in the result.
    """
    blobs: list[bytes] = []
    size = 0

    def encode(item: Any, where: str) -> Any:
        nonlocal size
        if item is None or type(item) in (bool, int, float, str):
            return item
        if isinstance(item, torch.Tensor):
            if type(item) is not torch.Tensor and type(item) is not torch.nn.Parameter:
                raise TypeError(
                    f"{where} is a {type(item).__name__} (a torch.Tensor subclass); "
                    "return a plain torch.Tensor"
                )
            if item.layout is not torch.strided or item.is_quantized or item.is_nested:
                raise TypeError(f"{where} is a {item.layout} tensor; return a dense tensor")
            dtype = str(item.dtype).removeprefix("torch.")
            if dtype not in WIRE_DTYPES:
                raise TypeError(f"{where} has dtype {item.dtype}; return a standard dtype")
            flat = item.detach().to("cpu").contiguous().reshape(-1)
            data = flat.view(torch.uint8).numpy().tobytes()
            blobs.append(data)
            spec = {
                "dtype": dtype,
                "shape": list(item.shape),
                "device": str(item.device),
                "offset": size,
                "nbytes": len(data),
            }
            size += len(data)
            return {"tensor": spec}
        if type(item) in (list, tuple):
            items = [encode(element, f"{where}[{i}]") for i, element in enumerate(item)]
            return {type(item).__name__: items}
        if type(item) is dict:
            if not all(type(key) is str for key in item):
                raise TypeError(f"{where} is a dict with non-string keys")
            return {"dict": {key: encode(item[key], f"{where}[{key!r}]") for key in item}}
        raise TypeError(f"{where} is a {type(item).__name__}, which is not plain data")

    header = json.dumps({"version": WIRE_VERSION, "value": encode(value, "the result")}).encode()
    if len(header) > protocol.MAX_RESULT_HEADER_BYTES:
        # Said here, where it reaches the student as their call's error; the trusted side
        # refuses such a header too, as student code could write the result itself.
        raise ValueError(protocol.header_too_long(len(header)))
    return b"".join([len(header).to_bytes(4, "little"), header, *blobs])


def _describe_exception(error: BaseException, phase: str, student_file: str) -> dict[str, Any]:
    frames = traceback.extract_tb(error.__traceback__)
    student_line = None
    for frame in frames:
        if os.path.basename(frame.filename) == student_file:
            student_line = frame.lineno
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        message = str(error)
    except BaseException:  # a hostile __str__ must not hide the error itself
        message = "<the exception's message could not be read>"
    return {
        "phase": phase,
        "type": type(error).__name__,
        "message": message[:MAX_MESSAGE_CHARS],
        "line": student_line,
        "traceback": text[-MAX_TRACEBACK_CHARS:],
    }


def _die_with_server(server_pidfd: int) -> None:
    """Be killed when the server dies, or exit now if it already has.

    The kernel sends the signal only if the server dies after the request, and forgets the
    request when our uid changes (prctl(2)); the server's pidfd is readable once it is gone.
    A student process nobody monitors must not run on.
    """
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([server_pidfd], [], [], 0)[0]:
        os._exit(EXIT_SETUP)


def _submission_paths(job: Job) -> list[str]:
    """What a job reads besides its own folder: its module's files and the probe file's folder
    (none for the start-up probe)."""
    if "submission_dir" not in job:
        return []
    return [job["submission_dir"], os.path.dirname(job["probe_file"])]


def _confine(state: ServerState, job: Job, setup: dict[str, Any], home: str) -> dict[str, Any]:
    """Landlock and seccomp, the walls that need no privilege (confine.py).

    Read: the operating system, Python and torch, and this job's folders; write: the job's
    home and shared memory (DataLoader workers), plus /tmp where it is a private tmpfs.
    Everything else is refused whatever its permissions: the solutions, the results, the
    course's checkout, other jobs.
    """
    read = [os.path.join("/", name) for name in CONFINED_SYSTEM_DIRS]
    read += [*state.keep, job["job_dir"], *_submission_paths(job)]
    write = [home, "/dev/shm", *(("/tmp", "/var/tmp") if setup.get("private_tmp") else ())]
    done = state.confine.confine(read=read, write=write)
    landlock, seccomp = bool(done["landlock"]), bool(done["seccomp"])
    hidden_but_readable = any(_inside(path, tree) for path in state.config["hide"] for tree in read)
    # The guarantees the namespaces give, kept by these other means where they were refused
    # (Docker's default profile): no socket but unix ones; nothing to read but the above.
    return {
        "landlock": landlock,
        "seccomp": seccomp,
        "network_isolated": setup["network_isolated"] or seccomp,
        "read_only_filesystem": setup["read_only_filesystem"] or landlock,
        "minimal_view": setup["minimal_view"] or landlock,
        "paths_hidden": setup["paths_hidden"] or (landlock and not hidden_but_readable),
    }


def _run_student(
    job: Job,
    state: ServerState,
    torch: Any,
    files: dict[str, int],
    pipes: dict[str, int],
) -> NoReturn:
    """Isolate, limit, unprivilege; import the student's file, run the probe, send data back."""
    os.setsid()
    _die_with_server(state.server_pidfd)
    job_dir = job["job_dir"]
    try:
        setup = _isolate(state, [job_dir, *_submission_paths(job)])
    except OSError as error:
        os.write(pipes["report"], json.dumps({"refused": f"isolation: {error}"}).encode())
        os._exit(EXIT_SETUP)
    # If memory runs out on the machine, the kernel should pick the student, not the grader.
    # (Before the confinement below, which leaves nothing under /proc writable.)
    with contextlib.suppress(OSError):
        _write_file("/proc/self/oom_score_adj", "1000")
    home = setup["home"] or os.path.join(job_dir, "home")
    setup.update(_confine(state, job, setup, home))
    missing = [name for name in state.require if not setup.get(name)]
    report: dict[str, Any] = {"setup": setup}
    if missing:
        report["refused"] = f"protections this server had at start are missing: {missing}"
    os.write(pipes["report"], json.dumps(report).encode())
    module_name = job.get("module")
    if missing or not module_name:  # refused, or the start-up probe (no student code)
        os._exit(EXIT_SETUP if missing else 0)

    # Lift every descriptor we keep above the targets first, so no dup2 closes one we need.
    null = os.open(os.devnull, os.O_RDONLY)
    targets = {
        0: null,
        1: pipes["stdout"],
        2: pipes["stderr"],
        RESULT_FD: files["result.bin"],
        ERROR_FD: files["error.json"],
        PROGRESS_FD: files["progress"],
        SERVER_FD: state.server_pidfd,
    }
    lifted = {target: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for target, fd in targets.items()}
    for target, fd in lifted.items():
        os.dup2(fd, target, inheritable=target <= 2)
    # The report pipe, the protocol and everything else the server held: not the student's.
    os.closerange(SERVER_FD + 1, 1 << 16)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    os.chdir(home)
    # What it creates is its own uid's alone, also where /dev/shm is shared with the tests of
    # other sandboxes (no mount namespace): two batch workers' sandboxes have two uids.
    os.umask(0o077)
    _set_limits(state.config["limits"], device=state.config["device"])
    _drop_privileges(state)
    _die_with_server(SERVER_FD)  # again: the change of uid cancelled the first request
    os.close(SERVER_FD)
    os.environ.update(HOME=home, TMPDIR=home, USER="sandbox", LOGNAME="sandbox")
    # A breakpoint() left in a submission does nothing: pdb would run the commands of a
    # .pdbrc the student's code wrote, in the probe's frames (`python -I` ignores
    # PYTHONBREAKPOINT, so the hook itself is replaced; patching sys back is refused at intake).
    sys.breakpointhook = _no_breakpoint
    # The warm-up's first optimizer step pointed these at the server's own folder, where the
    # sandbox uid cannot write: torch.compile, torch.export and torch.cond cache in them.
    os.environ.update(
        TORCHINDUCTOR_CACHE_DIR=os.path.join(home, "torchinductor"),
        TRITON_CACHE_DIR=os.path.join(home, "triton"),
    )
    if state.config["device"] == "cuda":
        _cap_gpu_memory(torch, int(state.config["limits"]["memory_mb"]))
    import tempfile

    tempfile.tempdir = None  # forget the server's cached temporary folder

    student_file = module_name + ".py"
    submission_dir = job["submission_dir"]
    sys.path.insert(0, submission_dir)
    phase = "import"
    try:
        # Written by the trusted side, and read before any student code runs.
        with open(os.path.join(job_dir, "input.pkl"), "rb") as handle:
            kwargs = pickle.load(handle)
        probes = state.probe_modules.get(job["probe_file"])
        if probes is None:  # the server could not import it: fail here, where it is reported
            probes = _load_module("probes", job["probe_file"])
        probe = getattr(probes, job["probe"])
        # Not a module student code can look up by name: every attack on the checks that
        # judge in this process (patch-probe-module, a probe rewritten to return what the
        # test expects) began with sys.modules["probes"], the one name probe files are
        # loaded under. The probe keeps its own globals. (Not a scan of sys.modules: its
        # iteration touches every module's reference count, 5 ms of copied pages a job.)
        sys.modules.pop("probes", None)
        judging = not job.get("import_student", True)
        if judging:
            # A judge loads what the student's code made: no text in it may run here.
            artifacts.guard_loaders(torch)
        # From here on the student's code may run (its module's top level): an exit before
        # this line is the set-up's, never the student's.
        os.write(PROGRESS_FD, STARTED)
        module = (
            None
            if judging
            else _load_module(module_name, os.path.join(submission_dir, student_file))
        )
        os.write(PROGRESS_FD, IMPORTED)
        phase = "run"
        result = probe(module, **kwargs)
        phase = "output"
        encoded = _encode_result(result, torch)
        with os.fdopen(RESULT_FD, "wb", closefd=False) as handle:
            handle.write(encoded)
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the student's too
        try:
            with os.fdopen(ERROR_FD, "w", encoding="utf-8", closefd=False) as handle:
                json.dump(_describe_exception(error, phase, student_file), handle)
        except BaseException:
            os._exit(EXIT_UNREPORTABLE)
        os._exit(EXIT_RAISED)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
    os._exit(0)


# -- the job's process tree (in the server, which is also the job's monitor) -------------------


class _Capture:
    """The first and last `limit // 2` bytes of a stream, however much flows through."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]

    def write(self, path: str) -> None:
        skipped = self.total - len(self.head) - len(self.tail)
        with open(path, "wb") as handle:
            handle.write(bytes(self.head))
            if skipped > 0:
                handle.write(f"\n[... {skipped} bytes of output left out ...]\n".encode())
            handle.write(bytes(self.tail))


def _children() -> list[int]:
    try:
        with open(f"/proc/self/task/{os.getpid()}/children", encoding="ascii") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        me = str(os.getpid())
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                        if stat.read().rsplit(")", 1)[1].split()[1] == me:
                            found.append(int(entry))
                except (OSError, IndexError):
                    continue
        return found


def _kill_descendants() -> None:
    """Kill and reap every process below this one; orphans keep coming back to a subreaper."""
    while True:
        for pid in _children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if reaped == 0:
            time.sleep(0.001)


class _PidNamespaces:
    """Gives every job's student process a fresh pid namespace, where the kernel allows it."""

    def __init__(self) -> None:
        self.root = os.geteuid() == 0
        # Our own pid namespace, to return to before asking for the next fresh one.
        self.home_fd = os.open("/proc/self/ns/pid", os.O_RDONLY) if self.root else -1

    def fork(self) -> int:
        """Fork like os.fork; the child is pid 1 of a new namespace if that is allowed."""
        if self.root:
            fresh = _libc.unshare(CLONE_NEWPID) == 0
            try:
                return os.fork()
            finally:
                if fresh:
                    _libc.setns(self.home_fd, CLONE_NEWPID)
        return self._fork_unprivileged()

    def _fork_unprivileged(self) -> int:
        # An ordinary user gets a pid namespace inside a user namespace of its own, which the
        # server could not leave again; a short-lived helper enters both and forks the
        # student, who is then re-parented to us (we are a subreaper). The student waits to
        # be adopted before it asks to die with its parent, or the helper's exit would kill it.
        pid_r, pid_w = os.pipe()
        adopted_r, adopted_w = os.pipe()
        helper = os.fork()
        if helper == 0:
            try:
                os.close(pid_r)
                os.close(adopted_w)
                uid, gid = os.getuid(), os.getgid()
                if _libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0:
                    with contextlib.suppress(OSError):
                        _write_file("/proc/self/setgroups", "deny")
                        _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
                        _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
                student = os.fork()
            except BaseException:
                os._exit(EXIT_SETUP)
            if student == 0:
                os.close(pid_w)
                os.read(adopted_r, 1)
                os.close(adopted_r)
                return 0
            os.write(pid_w, str(student).encode())
            os._exit(0)
        os.close(pid_w)
        os.close(adopted_r)
        with os.fdopen(pid_r, "rb") as pipe:
            text = pipe.read()
        os.waitpid(helper, 0)
        os.write(adopted_w, b"1")
        os.close(adopted_w)
        if not text:  # the helper failed: no namespaces, but the job still runs
            return os.fork()
        return int(text)


class _JobPipes:
    """The job's stdout and stderr (kept as a bounded head and tail) and its setup report."""

    def __init__(self, ends: dict[str, tuple[int, int]], limit: int) -> None:
        self.stdout, self.stderr, self.report_fd = (
            ends[name][0] for name in ("stdout", "stderr", "report")
        )
        self.streams = {self.stdout: _Capture(limit), self.stderr: _Capture(limit)}
        self.report = bytearray()

    def add(self, fd: int, chunk: bytes) -> None:
        if fd == self.report_fd:
            self.report += chunk[: 1 << 16]
        else:
            self.streams[fd].add(chunk)


def _run_job(
    job: Job, state: ServerState, torch: Any, namespaces: _PidNamespaces
) -> dict[str, Any]:
    """Run one job to its end: drain its output, enforce its wall time, leave nothing behind.

    Returns the job's `Exited` message.
    """
    started = time.monotonic()
    job_dir = job["job_dir"]
    created = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    files = {
        name: os.open(os.path.join(job_dir, name), created, 0o600)
        for name in ("result.bin", "error.json", "progress")
    }
    ends = {name: os.pipe() for name in ("stdout", "stderr", "report")}
    # Each job compiles its own student file: a job holds no other part's code, which its
    # module folder keeps out of reach (`SharedFiles.module_view` in job_files.py).
    _import_probes(job.get("probe_file", ""), state.probe_modules)
    pid = namespaces.fork()
    if pid == 0:
        try:
            for read_end, _ in ends.values():
                os.close(read_end)
            _run_student(job, state, torch, files, {k: w for k, (_, w) in ends.items()})
        except BaseException:
            # Our own bug, not the student's: the server's log (stderr) is for staff.
            traceback.print_exc()
        finally:
            os._exit(EXIT_SETUP)
    state.reply({"event": "started", "id": job["id"], "pid": pid})
    for fd in (*files.values(), *(write_end for _, write_end in ends.values())):
        os.close(fd)
    pipes = _JobPipes(ends, int(state.config["limits"]["max_output_bytes"]))
    exited = os.pidfd_open(pid)
    watched = {pipes.stdout, pipes.stderr, pipes.report_fd, exited}
    # Outside the student process, so that student code cannot lift it: see _NvmlReader.
    gpu_reader = state.gpu_memory if job.get("module") else None
    gpu_cap = (int(state.config["limits"]["memory_mb"]) + GPU_CONTEXT_ALLOWANCE_MB) * 2**20
    timed_out, gpu_used = _watch(
        pid,
        exited,
        pipes,
        watched,
        deadline=started + float(job["timeout_s"]),
        gpu_reader=gpu_reader,
        gpu_cap=gpu_cap,
    )
    # The student process is pid 1 of its namespace: its end is the end of all it started.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    _kill_descendants()
    # Every writer is dead now, so what is left in the pipes ends.
    grace = time.monotonic() + DRAIN_GRACE_S
    for fd in (pipes.stdout, pipes.stderr, pipes.report_fd):
        while fd in watched and time.monotonic() < grace:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            pipes.add(fd, chunk)
    for fd in (pipes.stdout, pipes.stderr, pipes.report_fd, exited):
        os.close(fd)
    try:
        summary: dict[str, Any] = dict(json.loads(bytes(pipes.report) or b"{}"))
    except (ValueError, TypeError):
        summary = {"refused": "the student process's setup report was unreadable"}
    for name, fd in (("stdout", pipes.stdout), ("stderr", pipes.stderr)):
        pipes.streams[fd].write(os.path.join(job_dir, f"{name}.txt"))
        summary[f"{name}_bytes"] = pipes.streams[fd].total
    if gpu_used is not None:
        summary["gpu_memory_mb"] = gpu_used >> 20
    summary.update(
        event="exited",
        id=job["id"],
        status=status,
        timed_out=timed_out,
        wall_s=round(time.monotonic() - started, 3),
    )
    return summary


def _watch(
    pid: int,
    exited: int,
    pipes: _JobPipes,
    watched: set[int],
    *,
    deadline: float,
    gpu_reader: Any,
    gpu_cap: int,
) -> tuple[bool, int | None]:
    """Drain the job's pipes until its student process exits, its wall time is up (True), or
    its GPU memory is over the cap (the bytes used); `watched` loses each fd that ended."""
    gpu_checked = 0.0
    while exited in watched:
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            return True, None
        if gpu_reader is not None:
            if now - gpu_checked >= GPU_WATCH_INTERVAL_S:
                gpu_checked = now
                gpu_used = _gpu_memory_over_cap(gpu_reader, pid, gpu_cap)
                if gpu_used is not None:
                    return False, gpu_used
            remaining = min(remaining, GPU_WATCH_INTERVAL_S)
        ready, _, _ = select.select(list(watched), [], [], remaining)
        for fd in ready:
            if fd == exited:
                watched.discard(fd)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                watched.discard(fd)
            else:
                pipes.add(fd, chunk)
    return False, None


# -- the server --------------------------------------------------------------------------------


def _import_probes(path: str, modules: dict[str, Any]) -> None:
    """Import a probe file here, once, so that no job pays for compiling it (none: no-op).

    Probe files are the course's own code (standard library and torch, no secrets). A forked
    student process gets its own copy of the module: what it does to it ends with the job.
    The file is named after its content, so a path always means the same code.
    """
    if not path or path in modules:
        return
    try:
        modules[path] = _load_module("probes", path)
    except BaseException:
        # The course's bug: every job imports the file itself and reports the error there.
        traceback.print_exc()
        modules[path] = None
    _freeze_heap()


def _freeze_heap() -> None:
    """Make the server's memory cheap to fork: each job's fork and exit scale with it.

    A garbage collection in a forked child would walk (and so copy, page by page) every
    object the server holds, torch's modules included: frozen objects are not walked. And
    its private memory goes into 2 MiB pages (heap.py).
    """
    gc.collect()
    gc.freeze()
    heap.collapse_private_memory()


def _warm_up(torch: Any) -> None:
    """Pay torch's lazy imports once here, not in every forked child."""
    import torch.autograd.gradcheck  # the module, without running it
    import torch.utils.data as data

    # No backward pass, here or anywhere before this process forks: where torch sees a GPU,
    # the first one starts autograd's device threads, and no process forked after that (the
    # servers, the student's jobs) can run autograd ("autograd's threading in combination
    # with fork-based multiprocessing"). The gradient is set by hand.
    weight = torch.nn.Parameter(torch.ones(2))
    weight.grad = torch.ones_like(weight)
    optimizer = torch.optim.SGD([weight], lr=0.1)
    optimizer.step()  # the first step imports torch._dynamo, hundreds of modules
    torch.optim.Adam([weight], lr=0.1).step()
    torch.nn.functional.mse_loss(torch.zeros(2), torch.ones(2))
    list(data.DataLoader(data.TensorDataset(torch.zeros(4, 1)), batch_size=2, shuffle=True))
    # Every job encodes its result; the first tensor.numpy() in a process pays for set-up.
    _encode_result({"tensor": torch.zeros(2), "pair": (1, 2.0)}, torch)


def _own_task_count() -> int:
    """Processes and threads of our uid: RLIMIT_NPROC counts them all when we are not root."""
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return count


def _probe_protections(
    state: ServerState, torch: Any, namespaces: _PidNamespaces
) -> dict[str, bool]:
    """Run the isolation steps once without student code: what does this machine allow?"""
    job: Job = {"id": 0, "job_dir": state.config["probe_dir"], "module": None, "timeout_s": 30}
    summary = _run_job(job, state, torch, namespaces)
    setup = summary.get("setup", {}) if not summary.get("refused") else {}
    found = {name: bool(setup.get(name)) for name in PROBED}
    found["separate_user"] = os.geteuid() == 0 and state.config.get("uid") is not None
    return found


def _read_config(control: socket.socket) -> Config:
    """The first line on the control socket: the trusted side's settings for this sandbox."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = control.recv(1 << 16)
        if not chunk:
            raise SystemExit(1)
        data += chunk
    return cast("Config", dict(json.loads(data)))


def _reap_servers() -> None:
    """Reap the submission servers that have ended (each is one of our direct children)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass


def _serve_submission(
    channel_fd: int, state: ServerState, torch: Any, namespaces: _PidNamespaces
) -> int:
    """One submission's server, forked from the zygote: run its jobs, then exit.

    Everything that touches the submission happens here and below (forking its student
    processes, draining their output), never in the zygote: the next
    submission's server starts from the zygote's memory again, which no student data ever
    passed through. The protocol runs on `channel_fd`, a socket the trusted side made for
    this submission alone.
    """
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != state.zygote:
        return 1  # the zygote died before we could ask to die with it
    # Not inherited through fork: what a job leaves behind must come back to this server.
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    os.close(state.server_pidfd)
    # The student processes die with their monitor, which is this server now.
    state.server_pidfd = os.pidfd_open(os.getpid())
    if state.nproc_baseline is not None:
        state.nproc_baseline += 1  # this server is one more process of our uid
    channel = socket.socket(fileno=channel_fd)
    requests = channel.makefile("r", encoding="utf-8")
    replies = channel.makefile("w", encoding="utf-8")

    def reply(message: Mapping[str, object]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    state.reply = reply
    try:
        for line in requests:
            job = json.loads(line)
            reply(_run_job(job, state, torch, namespaces))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the trusted side moved on to another submission
    return 0


def main() -> int:
    # Keep the protocol on private descriptors so stray prints can never corrupt it. Our
    # stdin is a unix socket: the trusted side sends each submission's channel through it.
    control = socket.socket(fileno=os.dup(0))
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    config: Config = _read_config(control)
    # As the client started us, or as it would have had it forked us from itself (a
    # PreforkedZygote): its scrubbed environment, our folder, our log.
    os.environ.clear()
    os.environ.update(config["environment"])
    os.chdir(config["workdir"])
    log_fd = os.open(
        os.path.join(config["workdir"], "server.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
    )
    os.dup2(log_fd, 2)
    os.close(log_fd)
    # If the grader dies (even by SIGKILL, say out of memory), so do we and every job below
    # us: each job's student process dies with us, and with it its whole pid namespace.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(config["parent"]):
        return 1  # the grader died before we could ask to die with it
    state = ServerState(
        config=config,
        zygote=os.getpid(),
        cover=[
            os.path.join("/", name)
            for name in sorted(os.listdir("/"))
            if name not in SYSTEM_TOP_DIRS
        ],
        # Readable once we have died: how a student process forked just before that finds out.
        server_pidfd=os.pidfd_open(os.getpid()),
    )
    # Whatever the start-up probe leaves behind is re-parented to us, and killed after it.
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.geteuid() != 0:
        state.nproc_baseline = _own_task_count()
    namespaces = _PidNamespaces()

    def reply(message: Mapping[str, object]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    started = time.perf_counter()
    import torch

    # As the trusted side and `check` set them.
    numerics.use_grading_numerics(torch, int(config["threads"]))
    _warm_up(torch)
    _freeze_heap()
    # What the covers must leave visible: the interpreter and its libraries, wherever they are.
    state.keep = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        *(sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")),
        os.path.dirname(os.path.dirname(torch.__file__)),
    ]

    state.confine = _sibling("confine")
    state.view = _server_view(state)
    state.server_offline = _leave_the_network()
    state.gpu_memory = _open_gpu_memory_reader(config["device"])
    protections = _probe_protections(state, torch, namespaces)
    # A job that cannot get what the probe got is refused, never run with less.
    state.require = [name for name in PROBED if protections[name]]
    reply(
        {
            "event": "ready",
            "torch": torch.__version__,
            "warm_up_s": round(time.perf_counter() - started, 3),
            "protections": protections,
            "gpu_memory_cap": _gpu_memory_cap(config["device"], state.gpu_memory),
        }
    )
    # The zygote: from here on it only forks one server per submission, and imports the
    # course's probe files it is told of (so that no later server pays for them). Nothing of
    # any submission ever reaches this process.
    while True:
        message, fds, _flags, _address = socket.recv_fds(control, 1 << 16, 1)
        _reap_servers()
        if not message:
            return 0
        request = json.loads(message)
        for path in request.get("probe_files", ()):
            _import_probes(str(path), state.probe_modules)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            reply({"event": "refused", "why": "a submission request carries one socket"})
            continue
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                control.close()
                replies_fd = replies.fileno()
                os.close(replies_fd)
                code = _serve_submission(fds[0], state, torch, namespaces)
            except BaseException:
                traceback.print_exc()  # our own bug: the server's log is for staff
            finally:
                os._exit(code)
        os.close(fds[0])
        reply({"event": "forked", "pid": pid})


if __name__ == "__main__":
    sys.exit(main())
