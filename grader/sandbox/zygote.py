"""The sandbox's zygote process, and the messages it and its servers send back.

The zygote is server.py run as a script: started as a fresh interpreter (`start_zygote`), or
forked from a process that has imported torch but holds nothing of a grading run yet
(`PreforkedZygote`), so the two share one import. Either way it gets a scrubbed environment
and a control socket for its stdin; its replies, and those of each submission's server it
forks, arrive as JSON lines (`MessageLines`). `grader.sandbox.client` drives it.
"""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any, NoReturn

from grader.sandbox.jsonlines import JsonLines
from grader.sandbox.protocol import Config
from grader.sandbox.settings import CUBLAS_WORKSPACE, SandboxSettings

SERVER_SCRIPT = Path(__file__).with_name("server.py")
# Descriptors a forked zygote closes: everything this process had open but the protocol's.
MAX_INHERITED_FD = 65536
# The server's messages are small (job started, job exited, ready); a longer line is dropped.
MAX_MESSAGE_BYTES = 1 << 20


def scrubbed_environment(settings: SandboxSettings, home: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home),
        "OMP_NUM_THREADS": str(settings.threads),
        "MKL_NUM_THREADS": str(settings.threads),
        # Ask NVML, not the CUDA driver, whether a GPU exists, so the server stays forkable.
        "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
        CUBLAS_WORKSPACE[0]: CUBLAS_WORKSPACE[1],
    }
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


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


def start_zygote(config: Config, workdir: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A zygote of its own: a fresh interpreter that imports torch itself."""
    log_file = (workdir / "server.log").open("ab")
    # Its stdin is a unix socket: each submission's channel is handed over through it.
    control, zygote_end = socket.socketpair()
    with zygote_end, log_file:
        process = subprocess.Popen(
            [sys.executable, "-I", str(SERVER_SCRIPT)],
            stdin=zygote_end.fileno(),
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=workdir,
            env=config["environment"],
            start_new_session=True,
        )
    return process, control


class MessageLines:
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
