"""Landlock and seccomp (grader/sandbox/confine.py), each tried in a child process of its own.

The child loads the module by path, as the fork server does, confines itself, then tries
what a student might: read a world-readable file outside its allowed folders, write outside
its job folder, connect over TCP, ptrace, unshare, open an inet socket. The pytest process
itself is never confined.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from grader.sandbox import confine as sandbox_confine

pytestmark = pytest.mark.skipif(
    not sandbox_confine.supported(), reason="the confinement layer speaks x86_64 syscalls"
)

CHILD = textwrap.dedent(
    """
    import ctypes, errno, importlib.util, json, os, socket, sys, threading
    spec = importlib.util.spec_from_file_location("confine", sys.argv[1])
    confine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(confine)
    settings = json.loads(sys.argv[2])
    if settings["mode"] == "landlock":
        read, write = settings["read"], settings["write"]
        abi, network, scoped = confine.apply_landlock(read=read, write=write)
        done = {"abi": abi, "network": network, "scoped": scoped}
    else:
        done = {"seccomp": confine.apply_seccomp()}

    def attempt(action):
        try:
            value = action()
            return "ok" if value is None else value
        except OSError as error:
            return errno.errorcode.get(error.errno, str(error.errno))

    libc = ctypes.CDLL(None, use_errno=True)

    def raw(number, *args):
        if libc.syscall(number, *args) == -1:
            raise OSError(ctypes.get_errno(), "")

    def connect():
        with socket.create_connection(("127.0.0.1", settings["port"]), timeout=5):
            pass

    def thread():
        box = []
        worker = threading.Thread(target=lambda: box.append(1))
        worker.start()
        worker.join()
        return "ok" if box else "no"

    def fork():
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        return "ok" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7 else "no"

    secret, job = settings["secret"], settings["job"]
    tried = {
        "read_secret": lambda: open(secret).read() and None,
        "list_secret_dir": lambda: os.listdir(os.path.dirname(secret)) and None,
        "read_job": lambda: open(os.path.join(job, "input.txt")).read() and None,
        "write_job": lambda: open(os.path.join(job, "out.txt"), "w").write("x") and None,
        "write_outside": lambda: open(os.path.join(settings["outside"], "planted"), "w").close(),
        "dev_null": lambda: open(os.devnull, "w").write("x") and None,
        "connect_tcp": connect,
        "inet_socket": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close(),
        "unix_pair": lambda: [s.close() for s in socket.socketpair()] and None,
        "ptrace_parent": lambda: raw(101, 16, os.getppid(), 0, 0),  # PTRACE_ATTACH
        "unshare_user": lambda: raw(272, 0x10000000),
        # IPC_PRIVATE objects, IPC_CREAT | 0600: each would outlive this process.
        "sysv_shm": lambda: raw(29, 0, 4096, 0o1600),
        "sysv_queue": lambda: raw(68, 0, 0o1600),
        "sysv_semaphores": lambda: raw(64, 0, 1, 0o1600),
        "posix_queue": lambda: raw(240, b"/confine-test-queue", os.O_CREAT | os.O_RDWR, 0o600, 0),
        "thread": thread,
        "fork": fork,
    }
    print(json.dumps({"done": done, **{name: attempt(action) for name, action in tried.items()}}))
    """
)


@pytest.fixture
def listener() -> Any:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    yield server
    server.close()


def _run_child(tmp_path: Path, mode: str, port: int) -> dict[str, Any]:
    secret_dir = tmp_path / "solutions"
    secret_dir.mkdir()
    secret = secret_dir / "reference.py"
    secret.write_text("SECRET = 1\n")
    secret.chmod(0o644)  # world-readable on purpose: Landlock must not care
    job = tmp_path / "job"
    job.mkdir()
    (job / "input.txt").write_text("inputs")
    outside = tmp_path / "outside"
    outside.mkdir()
    python_paths = {
        sys.prefix,
        sys.base_prefix,
        *(sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")),
    }
    settings = {
        "mode": mode,
        "read": sorted({"/usr", "/lib", "/lib64", "/etc", "/proc", *python_paths}),
        "write": [str(job)],
        "secret": str(secret),
        "job": str(job),
        "outside": str(outside),
        "port": port,
    }
    process = subprocess.run(
        [sys.executable, "-I", "-c", CHILD, sandbox_confine.__file__, json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 0, process.stderr
    return dict(json.loads(process.stdout))


def test_landlock_confines_files_and_tcp(tmp_path: Path, listener: socket.socket) -> None:
    abi = sandbox_confine.landlock_abi()
    if abi < 1:
        pytest.skip("this kernel offers no Landlock")
    got = _run_child(tmp_path, "landlock", listener.getsockname()[1])
    assert got["done"]["abi"] == abi
    # A world-readable file outside the allowed folders, and its folder: refused.
    assert got["read_secret"] == "EACCES"
    assert got["list_secret_dir"] == "EACCES"
    assert got["write_outside"] == "EACCES"
    assert not (tmp_path / "outside" / "planted").exists()
    # The job folder and the devices work as before.
    assert got["read_job"] == "ok"
    assert got["write_job"] == "ok"
    assert got["dev_null"] == "ok"
    assert got["thread"] == "ok"
    assert got["fork"] == "ok"
    if abi >= 4:
        assert got["done"]["network"]
        assert got["connect_tcp"] == "EACCES"
        with pytest.raises(TimeoutError):
            listener.accept()


def test_seccomp_denies_what_students_never_need(tmp_path: Path, listener: socket.socket) -> None:
    got = _run_child(tmp_path, "seccomp", listener.getsockname()[1])
    assert got["done"]["seccomp"] is True
    assert got["ptrace_parent"] == "EPERM"
    assert got["unshare_user"] == "EPERM"
    assert got["inet_socket"] == "EPERM"
    assert got["connect_tcp"] == "EPERM"
    for ipc in ("sysv_shm", "sysv_queue", "sysv_semaphores", "posix_queue"):
        assert got[ipc] == "EPERM", ipc
    # What ordinary code (and a DataLoader with workers) needs keeps working.
    assert got["unix_pair"] == "ok"
    assert got["thread"] == "ok"
    assert got["fork"] == "ok"
    assert got["read_job"] == "ok"


def test_seccomp_program_is_well_formed() -> None:
    program = sandbox_confine.seccomp_program()
    assert len(program) % 8 == 0
    instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    # Every jump lands inside the program, and the program ends in a return.
    for index, (code, jt, jf, _) in enumerate(instructions):
        if code & 0x07 == 0x05:  # BPF_JMP
            assert index + 1 + max(jt, jf) < len(instructions)
    assert instructions[-1][0] == sandbox_confine.BPF_RET_K
    denied = {k for code, _, _, k in instructions if code == sandbox_confine.BPF_JEQ_K}
    assert set(sandbox_confine.DENIED_SYSCALLS.values()) <= denied


def test_confine_reports_what_took_hold(tmp_path: Path) -> None:
    # In a child: the pytest process must stay unconfined.
    code = textwrap.dedent(
        """
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("confine", sys.argv[1])
        confine = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(confine)
        result = confine.confine(read=[sys.prefix, sys.base_prefix, "/usr"], write=[sys.argv[2]])
        print(json.dumps(result))
        """
    )
    process = subprocess.run(
        [sys.executable, "-I", "-c", code, sandbox_confine.__file__, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 0, process.stderr
    got = json.loads(process.stdout)
    assert got["seccomp"] is True
    assert got["landlock"] is (sandbox_confine.landlock_abi() > 0)
    assert os.path.exists(tmp_path)
