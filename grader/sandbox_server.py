"""The student side: a fork server that runs probes against student code, one child per job.

Started by grader/sandbox.py as `python -I sandbox_server.py`, with a scrubbed environment.
It imports only the standard library and torch (never the grader package), imports torch
once, triggers torch's lazy imports once, and then forks a fresh child for every job. The
child isolates itself (new session, no network, hidden paths, resource limits, no
privileges), imports the student's file, runs the probe and writes plain data back as a
torch file that the trusted side decodes with `weights_only=True`. Nothing here decides a
score: the trusted side only believes what it can check.

Protocol, one JSON object per line: the trusted side writes jobs on our stdin; we answer
on our stdout with {"event": "ready"}, then per job {"event": "started", "pid"} and
{"event": "exited", "status"}.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import resource
import signal
import sys
import time
import traceback
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
MAX_MESSAGE_CHARS = 4000
MAX_TRACEBACK_CHARS = 6000

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write_file(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _enter_namespaces(hide: list[str]) -> dict[str, bool]:
    """Cut the network and mask hidden paths, as far as this kernel and user allow."""
    done = {"network": False, "hidden_paths": False}
    if os.geteuid() == 0:
        flags = CLONE_NEWNET | CLONE_NEWNS
    else:
        # An unprivileged user namespace lets an ordinary user do the same on most kernels.
        flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(flags) != 0:
        return done
    if flags & CLONE_NEWUSER:
        try:
            _write_file("/proc/self/setgroups", "deny")
            _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
            _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:
            pass
    done["network"] = True
    try:
        _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        for path in hide:
            target = path.encode()
            if os.path.isdir(path):
                _check(
                    _libc.mount(
                        b"tmpfs", target, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k"
                    ),
                    f"hide {path}",
                )
            elif os.path.exists(path):
                _check(_libc.mount(b"/dev/null", target, None, MS_BIND, None), f"hide {path}")
        done["hidden_paths"] = True
    except OSError:
        pass
    return done


def _set_limits(limits: dict[str, Any], *, device: str) -> None:
    def cap(kind: int, value: int) -> None:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    cpu_s = int(limits["timeout_s"]) + 2
    cap(resource.RLIMIT_CPU, cpu_s)
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * 1024 * 1024)
    cap(resource.RLIMIT_NOFILE, 256)
    if device == "cpu":
        # The address-space cap counts what torch already mapped, so it is added on top.
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        cap(resource.RLIMIT_AS, mapped + int(limits["memory_mb"]) * 1024 * 1024)
    # A file over the size cap should fail the write, not kill the process silently.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _drop_privileges(uid: int | None, gid: int | None, max_processes: int) -> None:
    if uid is None or gid is None or os.geteuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    # Counted per user, so it only means something once we are the sandbox user.
    resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))


def _to_wire(value: Any, where: str, torch: Any) -> Any:
    """Copy `value` into plain data, refusing anything else with a message naming where it is."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and type(value) is not torch.nn.Parameter:
            raise TypeError(
                f"{where} is a {type(value).__name__} (a torch.Tensor subclass); "
                "return a plain torch.Tensor"
            )
        return value.detach().clone()
    if type(value) in (list, tuple):
        items = [_to_wire(item, f"{where}[{i}]", torch) for i, item in enumerate(value)]
        return items if type(value) is list else tuple(items)
    if type(value) is dict:
        if not all(type(key) is str for key in value):
            raise TypeError(f"{where} is a dict with non-string keys")
        return {key: _to_wire(item, f"{where}[{key!r}]", torch) for key, item in value.items()}
    raise TypeError(f"{where} is a {type(value).__name__}, which is not plain data")


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


def _load_module(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run_child(job: dict[str, Any], config: dict[str, Any], torch: Any) -> None:
    """Everything a child does; never returns (the caller `_exit`s)."""
    os.setsid()
    job_dir = job["job_dir"]
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(os.path.join(job_dir, "stdout.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(os.path.join(job_dir, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(3, 65536)  # the protocol pipes and anything else the server holds
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    os.chdir(job_dir)
    _enter_namespaces(config["hide"])
    _set_limits(config["limits"], device=config["device"])
    _drop_privileges(config.get("uid"), config.get("gid"), int(config["limits"]["max_processes"]))
    os.environ["HOME"] = job_dir
    os.environ["TMPDIR"] = job_dir

    student_file = job["module"] + ".py"
    submission_dir = os.path.join(job_dir, "submission")
    sys.path.insert(0, submission_dir)
    error_path = os.path.join(job_dir, "error.json")
    phase = "import"
    try:
        kwargs = torch.load(os.path.join(job_dir, "input.pt"), weights_only=True)
        probes = _load_module("probes", os.path.join(job_dir, "probes.py"))
        probe = getattr(probes, job["probe"])
        module = _load_module(job["module"], os.path.join(submission_dir, student_file))
        _write_file(os.path.join(job_dir, "imported"), "")
        phase = "run"
        result = probe(module, **kwargs)
        phase = "output"
        torch.save(_to_wire(result, "the result", torch), os.path.join(job_dir, "result.pt"))
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the student's too
        try:
            with open(error_path, "w", encoding="utf-8") as handle:
                json.dump(_describe_exception(error, phase, student_file), handle)
        except BaseException:
            os._exit(3)
        os._exit(2)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
    os._exit(0)


def _warm_up(torch: Any) -> None:
    """Pay torch's lazy imports once here, not in every forked child."""
    import torch.utils.data as data

    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    (weight * 2).sum().backward()
    optimizer.step()  # the first step imports torch._dynamo (~1 s, 800 modules)
    torch.optim.Adam([weight], lr=0.1).step()
    torch.nn.functional.mse_loss(torch.zeros(2), torch.ones(2))
    list(data.DataLoader(data.TensorDataset(torch.zeros(4, 1)), batch_size=2, shuffle=True))
    x = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda t: t * 2, (x,))


def main() -> int:
    # Keep the protocol on private descriptors so stray prints can never corrupt it.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    config = json.loads(requests.readline())

    started = time.perf_counter()
    import torch

    torch.set_num_threads(int(config["threads"]))
    # TF32 would make float32 matmuls differ from the reference by ~1e-3 on Ampere+ GPUs.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    _warm_up(torch)

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    reply(
        {
            "event": "ready",
            "torch": torch.__version__,
            "warm_up_s": round(time.perf_counter() - started, 3),
            "protections": _probe_protections(config),
        }
    )
    for line in requests:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                _run_child(job, config, torch)
            finally:
                os._exit(4)
        reply({"event": "started", "id": job["id"], "pid": pid})
        _, status = os.waitpid(pid, 0)
        reply({"event": "exited", "id": job["id"], "status": status})
    return 0


def _probe_protections(config: dict[str, Any]) -> dict[str, bool]:
    """Find out in a throwaway child which isolation steps this machine allows."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            done = _enter_namespaces(config["hide"])
        except BaseException:
            done = {"network": False, "hidden_paths": False}
        os.write(write_end, json.dumps(done).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    done = json.loads(data or b"{}")
    return {
        "network_isolated": bool(done.get("network")),
        "paths_hidden": bool(done.get("hidden_paths")),
        "unprivileged_user": os.geteuid() == 0 and config.get("uid") is not None,
    }


if __name__ == "__main__":
    sys.exit(main())
