"""The sandbox on its own: limits from the environment, decoding, output capture, isolation."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pickle
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.course.manifest import Limits
from grader.errors import UsageError
from grader.intake.source_check import inspect_source
from grader.sandbox import confine as sandbox_confine
from grader.sandbox.client import PendingJob, Sandbox, SandboxError
from grader.sandbox.feedback import StudentFailure
from grader.sandbox.identity import live_processes_of, remove_files_of
from grader.sandbox.protocol import MAX_RESULT_HEADER_BYTES
from grader.sandbox.settings import (
    BUDGET_OVERRIDE_ENV,
    PROTECTION_NAMES,
    TIMEOUT_OVERRIDE_ENV,
    SandboxSettings,
    limits_from_environment,
    protections_notice,
)
from grader.sandbox.wire import MAX_RESULT_VALUES, decode_result

SERVER = Path(__file__).resolve().parent.parent / "grader" / "sandbox" / "server.py"


def _server_module() -> Any:
    spec = importlib.util.spec_from_file_location("sandbox_server_under_test", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would (its dataclasses look it up there)
    spec.loader.exec_module(module)
    return module


def test_the_timeout_override_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = Limits(timeout_s=60, part_budget_s=90)
    monkeypatch.delenv(TIMEOUT_OVERRIDE_ENV, raising=False)
    monkeypatch.delenv(BUDGET_OVERRIDE_ENV, raising=False)
    assert limits_from_environment(limits) == limits
    monkeypatch.setenv(TIMEOUT_OVERRIDE_ENV, "2.5")
    assert limits_from_environment(limits).timeout_s == 2.5
    assert limits_from_environment(limits).part_budget == 90.0
    # A manifest without a budget keeps the one its own test limit gives (twice it).
    assert limits_from_environment(Limits(timeout_s=60)).part_budget == 120.0
    monkeypatch.setenv(BUDGET_OVERRIDE_ENV, "7")
    assert limits_from_environment(limits).part_budget == 7.0
    for name in (TIMEOUT_OVERRIDE_ENV, BUDGET_OVERRIDE_ENV):
        for bad in ("soon", "0", "-3", "99999"):
            monkeypatch.setenv(name, bad)
            with pytest.raises(UsageError, match=name):
                limits_from_environment(limits)
        monkeypatch.setenv(name, "5")


def _encoded(value: Any, path: Path) -> Path:
    """`value` as the student side writes it."""
    path.write_bytes(_server_module()._encode_result(value, torch))
    return path


def _forged(header: Any, path: Path, blob: bytes = b"") -> Path:
    """A result file written by hand, as student code could write it to its result descriptor."""
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(4, "little") + text + blob)
    return path


def test_results_round_trip_exactly(tmp_path: Path) -> None:
    value: dict[str, Any] = {
        "y": torch.arange(6.0).reshape(2, 3).t(),  # not contiguous
        "n": [1, 2.5, "x", None, True, float("nan")],
        "t": (torch.zeros(2, dtype=torch.bfloat16), torch.tensor(True), torch.empty(0, 3)),
        "ints": torch.tensor([[-(2**62)]]),
        "parameter": torch.nn.Parameter(torch.ones(2)),
    }
    decoded = decode_result(_encoded(value, tmp_path / "ok.bin"))
    assert decoded.keys() == value.keys() and type(decoded["t"]) is tuple
    assert decoded["n"][:5] == value["n"][:5] and math.isnan(decoded["n"][5])
    for got, want in [
        (decoded["y"], value["y"]),
        *zip(decoded["t"], value["t"], strict=True),
        (decoded["ints"], value["ints"]),
        (decoded["parameter"], value["parameter"].detach()),
    ]:
        assert type(got) is torch.Tensor and not got.requires_grad
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)


class Lying(torch.Tensor):
    pass


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (torch.zeros(2).as_subclass(Lying), "subclass"),
        (torch.zeros(2, 2).to_sparse(), "dense"),
        ({1: torch.zeros(1)}, "non-string keys"),
        ([torch.zeros(1, dtype=torch.float8_e4m3fn)], r"the result\[0\] has dtype"),
        ({"a": {1, 2}}, r"the result\['a'\] is a set"),
    ],
    ids=["subclass", "sparse", "int-key", "float8", "set"],
)
def test_the_student_side_refuses_anything_but_plain_data(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        _server_module()._encode_result(value, torch)


def _tensor_header(**changes: Any) -> dict[str, Any]:
    spec = {"dtype": "float32", "shape": [1], "device": "cpu", "offset": 0, "nbytes": 4}
    return {"version": 1, "value": {"tensor": {**spec, **changes}}}


@pytest.mark.parametrize(
    ("header", "blob"),
    [
        (_tensor_header(shape=[3], nbytes=12), bytes(8)),
        (_tensor_header(shape=[2], nbytes=12), bytes(12)),
        (_tensor_header(dtype="object"), bytes(4)),
        (_tensor_header(dtype=["float32"]), bytes(4)),
        (_tensor_header(device="meta"), bytes(4)),
        (_tensor_header(shape=[-1]), bytes(4)),
        (_tensor_header(offset=-4), bytes(4)),
        ({"version": 1, "value": {"set": [1, 2]}}, b""),
        ({"version": 1, "value": {"list": [1], "tuple": [2]}}, b""),
        ({"version": 2, "value": 1}, b""),
        ({"version": 1, "value": [1, 2]}, b""),
        # The same bytes named again and again: a copy per mention would exhaust memory.
        ({"version": 1, "value": {"list": [_tensor_header()["value"]] * 1000}}, bytes(4)),
        # Ranges out of the order they were written in.
        (
            {
                "version": 1,
                "value": {
                    "list": [
                        _tensor_header(offset=4)["value"],
                        _tensor_header(offset=0)["value"],
                    ]
                },
            },
            bytes(8),
        ),
    ],
    ids=[
        "short-data", "wrong-size", "dtype", "dtype-not-text", "device", "negative-dim",
        "negative-offset", "unknown-tag", "two-tags", "version", "untagged-list",
        "aliased-bytes", "ranges-backwards",
    ],
)  # fmt: skip
def test_forged_results_are_refused(tmp_path: Path, header: Any, blob: bytes) -> None:
    with pytest.raises(ValueError):
        decode_result(_forged(header, tmp_path / "forged.bin", blob))


def test_results_that_are_not_in_the_format_or_too_big_are_refused(tmp_path: Path) -> None:
    cases = {
        "pickle": pickle.dumps({"y": 1}),
        "empty": b"",
        "header-past-the-end": (1000).to_bytes(4, "little") + b"{}",
        "not-json": (3).to_bytes(4, "little") + b"\xff\xfe\x00",
        "too-deep": (8000).to_bytes(4, "little") + b"[" * 4000 + b"]" * 4000,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError):
            decode_result(tmp_path / name)
    deep: dict[str, Any] = {"version": 1, "value": 0}
    for _ in range(100):
        deep["value"] = {"list": [deep["value"]]}
    with pytest.raises(ValueError, match="nested"):
        decode_result(_forged(deep, tmp_path / "nested.bin"))
    big = _encoded(torch.zeros(1024), tmp_path / "big.bin")
    with pytest.raises(ValueError, match="cap"):
        decode_result(big, max_bytes=1024)


def test_results_with_more_values_than_the_cap_are_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_cap = [0] * (MAX_RESULT_VALUES - 10)
    assert decode_result(_encoded(at_cap, tmp_path / "at-cap.bin")) == at_cap
    many_dicts = {"version": 1, "value": {"list": [{"dict": {}}] * MAX_RESULT_VALUES}}
    path = _forged(many_dicts, tmp_path / "many.bin")
    parsed: list[bytes] = []
    monkeypatch.setattr(json, "loads", parsed.append)  # the module wire parses with
    with pytest.raises(ValueError, match=f"more than {MAX_RESULT_VALUES:,} values"):
        decode_result(path)
    assert parsed == []


def test_a_result_of_long_text_is_refused_on_both_sides(tmp_path: Path) -> None:
    # A 3 MiB string of lone surrogates would be 6 MB per copy in the grading process.
    text = "\ud800" * (3 * 2**20)
    with pytest.raises(ValueError, match=r"MiB of text, numbers and lists outside tensors"):
        _server_module()._encode_result({"device": text}, torch)
    forged = _forged({"version": 1, "value": text}, tmp_path / "long.bin")
    with pytest.raises(ValueError, match=r"over the 2 MiB cap"):
        decode_result(forged)
    at_cap = "x" * (MAX_RESULT_HEADER_BYTES - 100)
    assert decode_result(_encoded(at_cap, tmp_path / "at-cap.bin")) == at_cap


def test_output_capture_keeps_a_bounded_head_and_tail(tmp_path: Path) -> None:
    capture = _server_module()._Capture(10)
    for chunk in (b"abc", b"defgh", b"x" * 1000, b"12345"):
        capture.add(chunk)
    capture.write(str(tmp_path / "out.txt"))
    text = (tmp_path / "out.txt").read_text()
    assert text.startswith("abcde") and text.endswith("12345")
    assert "[... 1003 bytes of output left out ...]" in text
    assert capture.total == 1013


def test_the_notice_names_the_protections_that_were_off() -> None:
    assert protections_notice({"off": []}) == ""
    notice = protections_notice({"off": ["network_isolated", "separate_user"]})
    assert PROTECTION_NAMES["network_isolated"] in notice
    assert PROTECTION_NAMES["separate_user"] in notice
    assert notice.count("\n") == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_leftovers_of_the_sandbox_uid_are_removed_and_nothing_else(tmp_path: Path) -> None:
    uid = 59_999
    shared = tmp_path / "shared"
    (shared / "nested").mkdir(parents=True)
    for folder in (shared, shared / "nested"):
        folder.chmod(0o777)
    private = tmp_path / "private"
    private.mkdir()
    theirs = [shared / "dropped", shared / "nested" / "deeper", private / "unreachable"]
    for path in theirs:
        path.write_text("x")
        os.chown(path, uid, uid)
    (shared / "made-a-folder").mkdir()
    os.chown(shared / "made-a-folder", uid, uid)
    mine = shared / "grader-file"
    mine.write_text("keep")
    remove_files_of(uid, [shared])
    assert not theirs[0].exists() and not theirs[1].exists()
    assert not (shared / "made-a-folder").exists()
    assert theirs[2].exists()  # not in a folder the uid could write, so never looked at
    assert mine.read_text() == "keep"


# -- one live sandbox, several jobs ----------------------------------------------------------

PROBES = """
def run(part, **kwargs):
    return part.run(**kwargs)
"""

STUDENT = """
import os
import socket
import time


def _try(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return type(error).__name__


def _new_file_mode():
    path = os.path.join("/dev/shm", "made-by-the-student")
    with open(path, "w"):
        pass
    return os.stat(path).st_mode & 0o777


def _connect_unix(path):
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(path)


def run(what, port=0, hidden="", canary="", service=""):
    if what == "look":
        return {
            "uid": os.getuid(),
            "groups": os.getgroups(),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "tmp": sorted(os.listdir("/tmp")),
            "hidden_exists": os.path.exists(hidden),
            "write_canary": _try(lambda: open(canary, "a").write("x")),
            "write_root": _try(lambda: open("/hostile", "w")),
            "connect": _try(lambda: socket.create_connection(("127.0.0.1", port), timeout=1)),
            "new_file_mode": _new_file_mode(),
            "connect_service": _try(lambda: _connect_unix(service)),
        }
    if what == "daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        return "left a daemon"
    if what in ("flood", "flood-then-fail"):
        for _ in range(20000):
            print("flood " * 100)
        if what == "flood":
            return "flooded"
    if what == "sleep":
        time.sleep(600)
    raise ValueError(what)
"""


@pytest.fixture(scope="module")
def live_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, Path]]:
    root = tmp_path_factory.mktemp("sandbox")
    (root / "student.py").write_text(STUDENT)
    (root / "probes.py").write_text(PROBES)
    hidden = root / "hidden"
    hidden.mkdir()
    (hidden / "answer.txt").write_text("42")
    settings = SandboxSettings(
        limits=Limits(timeout_s=3, max_output_kb=4), hide=(hidden,), keep_jobs=False
    )
    with Sandbox(settings, {"student.py": root / "student.py"}, root / "work") as sandbox:
        yield sandbox, root


def _run(sandbox: Sandbox, root: Path, **kwargs: Any) -> Any:
    return sandbox.run(module="student", probe_file=root / "probes.py", probe="run", kwargs=kwargs)


def _assert_private_tmp(listing: list[str], job_root: Path) -> None:
    """/tmp as a job saw it: its home folder, and the ways back to what is put back read-only
    (its job folder, and Python and torch where they live under /tmp, as in a CI checkout)."""
    put_back = (job_root, Path(sys.prefix), Path(sys.base_prefix), Path(torch.__file__))
    allowed = {"home"} | {p.parts[2] for p in put_back if p.parts[1:2] == ("tmp",)}
    assert set(listing) <= allowed and "home" in listing


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid and namespace checks need root")
def test_a_job_is_isolated(live_sandbox: tuple[Sandbox, Path], tmp_path: Path) -> None:
    sandbox, root = live_sandbox
    assert sandbox.protections["off"] == [], sandbox.protections
    canary = tmp_path / "canary"
    canary.write_text("")
    canary.chmod(0o666)
    # Like the host's D-Bus or systemd-resolved socket: in /run, open to every user.
    service = Path("/run") / f"torch-grader-test-{os.getpid()}.sock"
    with socket.socket() as listener, socket.socket(socket.AF_UNIX) as service_listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        service_listener.bind(str(service))
        try:
            service.chmod(0o666)
            service_listener.listen()
            got = _run(
                sandbox,
                root,
                what="look",
                port=listener.getsockname()[1],
                hidden=str(root / "hidden" / "answer.txt"),
                canary=str(canary),
                service=str(service),
            )
        finally:
            service.unlink()
    assert sandbox.identity is not None and got["uid"] == sandbox.identity.uid
    assert got["groups"] == []
    assert got["pids"] == [1]  # its own pid namespace, with a /proc of its own
    _assert_private_tmp(got["tmp"], root)
    assert not got["hidden_exists"]
    assert got["write_canary"] != "ok" and got["write_root"] != "ok"
    assert got["connect"] != "ok"
    assert got["connect_service"] != "ok"  # /run is covered: no way out through a socket
    assert canary.read_text() == ""
    # Private to its uid even in a /dev/shm shared with other sandboxes' tests.
    assert got["new_file_mode"] == 0o600


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid sweep needs root")
def test_no_process_outlives_its_job(live_sandbox: tuple[Sandbox, Path]) -> None:
    sandbox, root = live_sandbox
    assert _run(sandbox, root, what="daemon") == "left a daemon"
    assert sandbox.identity is not None
    assert live_processes_of(sandbox.identity.uid) == []


@pytest.mark.slow
def test_a_flood_is_kept_to_its_head_and_tail(live_sandbox: tuple[Sandbox, Path]) -> None:
    sandbox, root = live_sandbox
    assert _run(sandbox, root, what="flood") == "flooded"
    with pytest.raises(StudentFailure) as failure:
        _run(sandbox, root, what="flood-then-fail")
    assert failure.value.outcome == "error" and "ValueError" in failure.value.message
    stdout = failure.value.output.stdout
    assert stdout.startswith("flood flood") and stdout.rstrip().endswith("flood")
    assert "bytes of output left out" in stdout and len(stdout) < 4 * 1024 + 100


@pytest.mark.slow
def test_the_wall_time_limit_stops_a_sleeper(live_sandbox: tuple[Sandbox, Path]) -> None:
    sandbox, root = live_sandbox
    with pytest.raises(StudentFailure) as failure:
        _run(sandbox, root, what="sleep")
    assert failure.value.outcome == "timeout"
    assert "Stopped after 3 s while running your code" in failure.value.message
    assert _run(sandbox, root, what="daemon") == "left a daemon"  # the server lives on


@pytest.mark.slow
def test_each_submission_gets_a_fresh_server_from_the_same_zygote(
    live_sandbox: tuple[Sandbox, Path],
) -> None:
    sandbox, root = live_sandbox
    assert _run(sandbox, root, what="daemon") == "left a daemon"
    zygote, first = sandbox._process, sandbox._server_pid
    sandbox.use_submission({"student.py": root / "student.py"}, {})
    assert _run(sandbox, root, what="daemon") == "left a daemon"
    assert sandbox._process is zygote and sandbox._server_pid not in (0, first)
    # A server that dies costs its job only; the next job gets a new one, torch stays warm.
    # Killed before the job starts, or under it: either way the grader's error, never the
    # student's timeout.
    for started in (False, True):
        job = sandbox.submit(
            module="student", probe_file=root / "probes.py", probe="run", kwargs={"what": "sleep"}
        )
        if started:
            time.sleep(1)
        os.kill(sandbox._server_pid, 9)
        with pytest.raises(SandboxError):
            sandbox.result(job)
    assert _run(sandbox, root, what="daemon") == "left a daemon"
    assert sandbox._process is zygote


# Imports made only under a top-level __main__ guard are outside the module's import closure
# (grader.intake.source_check.live_imports), so the rules do not read those modules; the closure is
# also all a job can import, so a student who forces the block to run gets an ImportError.
FORCED_MAIN_BLOCK = """
__name__ = "__main__"  # makes the block below run when the job imports this file
if __name__ == "__main__":
    from helper import answer


def run(what):
    return answer
"""
LIVE_IMPORT = """
from helper import answer


def run(what):
    return answer
"""


@pytest.mark.slow
def test_a_module_imported_only_under_the_main_guard_cannot_be_imported(
    live_sandbox: tuple[Sandbox, Path], tmp_path: Path
) -> None:
    sandbox, root = live_sandbox
    helper = tmp_path / "helper.py"
    helper.write_text("answer = 'the helper ran'\n")
    got = {}
    try:
        for kind, text in (("forced", FORCED_MAIN_BLOCK), ("live", LIVE_IMPORT)):
            (tmp_path / kind).mkdir()
            student = tmp_path / kind / "student.py"
            student.write_text(text)
            files = {"student.py": student, "helper.py": helper}
            imports = {
                name: inspect_source(name, path.read_bytes()).imports
                for name, path in files.items()
            }
            sandbox.use_submission(files, imports)
            try:
                got[kind] = _run(sandbox, root, what="answer")
            except StudentFailure as failure:
                got[kind] = failure.message
    finally:
        sandbox.use_submission({"student.py": root / "student.py"}, {})
    assert got["live"] == "the helper ran"
    assert "No module named 'helper'" in got["forced"], got["forced"]


@pytest.mark.slow
def test_the_report_says_how_gpu_memory_is_capped(live_sandbox: tuple[Sandbox, Path]) -> None:
    sandbox, _ = live_sandbox
    assert sandbox.protections["gpu_memory_cap"] == "none (cpu)"


class FakeNvml:
    """GPU memory per pid, as NVML would report it."""

    def __init__(self, used: dict[int, int]) -> None:
        self.used = used

    def processes(self) -> dict[int, int]:
        return dict(self.used)


def test_the_gpu_watchdog_counts_only_the_jobs_processes() -> None:
    server = _server_module()
    mib = 2**20
    # 100 is the student, 101 a DataLoader worker it started; 7 is the grader's reference.
    reader = FakeNvml({100: 600 * mib, 101: 500 * mib, 7: 30_000 * mib})

    def belongs(pid: int, student: int) -> bool:
        return pid in (student, student + 1)

    assert server._gpu_memory_over_cap(reader, 100, 1024 * mib, belongs) == 1100 * mib
    assert server._gpu_memory_over_cap(reader, 100, 2048 * mib, belongs) is None
    assert server._gpu_memory_over_cap(FakeNvml({}), 100, 0, belongs) is None
    # Without a fake: only pid 100 itself, in our namespace, belongs to a job of pid 100.
    assert server._in_job(100, 100)
    assert not server._in_job(os.getpid(), 1)


def test_the_gpu_cap_is_reported_and_inert_without_a_gpu() -> None:
    server = _server_module()
    assert server._open_gpu_memory_reader("cpu") is None
    assert server._gpu_memory_cap("cpu", None) == "none (cpu)"
    assert server._gpu_memory_cap("cuda", None) == "in-process only"
    assert server._gpu_memory_cap("cuda", FakeNvml({})) == "nvml-watchdog"


def test_a_job_over_the_gpu_memory_cap_is_told_so(tmp_path: Path) -> None:
    settings = SandboxSettings(limits=Limits(memory_mb=512), device="cuda")
    sandbox = Sandbox(settings, {}, tmp_path)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    job = PendingJob(id=1, module="student", job_dir=job_dir, deadline=0.0, timeout_s=60.0)
    exited = {"event": "exited", "status": 9, "timed_out": False, "setup": {}}
    with pytest.raises(StudentFailure) as failure:
        sandbox._interpret(job, {**exited, "gpu_memory_mb": 1700}, backstop=False, elapsed=1.0)
    assert "used 1700 MB of GPU memory" in failure.value.message
    assert "the limit is 512 MB" in failure.value.message


def test_the_server_needs_no_grader_imports(tmp_path: Path) -> None:
    """The server runs with `python -I` outside the package: only stdlib and torch."""
    check = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('server', sys.argv[1])\n"
        "sys.modules['server'] = module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'grader'))\n"
    )
    process = subprocess.run(
        [sys.executable, "-I", "-c", check, str(SERVER)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert process.stdout.strip() == "[]", process.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root")
def test_a_job_shapes_the_whole_view_where_the_server_has_none(tmp_path: Path) -> None:
    """As an ordinary user the server cannot shape a view of its own: each job shapes it all."""
    server = _server_module()
    work, job, hidden = tmp_path / "work", tmp_path / "work" / "jobs" / "1", tmp_path / "hidden"
    job.mkdir(parents=True)
    hidden.mkdir()
    (hidden / "answer.txt").write_text("42")
    canary = tmp_path / "canary"
    canary.write_text("")
    state = server.ServerState(
        config={
            "private_dirs": ["/tmp", "/var/tmp", "/dev/shm", str(work)],
            "hide": [str(hidden)],
            "limits": {"tmp_mb": 8},
        },
        keep=[sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(torch.__file__))],
        cover=[os.path.join("/", n) for n in os.listdir("/") if n not in server.SYSTEM_TOP_DIRS],
    )
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the forked child reports through the pipe)
        try:
            done = server._isolate(state, [str(job)])
            seen = {
                "done": done,
                "tmp": sorted(os.listdir("/tmp")),
                "job_visible": job.is_dir(),
                "hidden_exists": (hidden / "answer.txt").exists(),
                "write_canary": _try(lambda: canary.write_text("x")),  # lands in the private /tmp
                "write_root": _try(lambda: Path("/hostile").write_text("x")),
                "write_job": _try(lambda: (job / "x").write_text("x")),
            }
            os.write(write_end, pickle.dumps(seen))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        seen = pickle.loads(pipe.read())
    os.waitpid(child, 0)
    for name in (
        "network_isolated", "ipc_isolated", "read_only_filesystem", "private_tmp",
        "paths_hidden", "minimal_view",
    ):  # fmt: skip
        assert seen["done"][name], (name, seen["done"])
    _assert_private_tmp(seen["tmp"], tmp_path)
    assert seen["job_visible"] and not seen["hidden_exists"]
    assert (seen["write_root"], seen["write_job"]) == ("OSError", "OSError")
    assert canary.read_text() == "" and not Path("/hostile").exists()


def _try(action: Any) -> str:
    try:
        action()
        return "ok"
    except OSError as error:
        return type(error).__name__


@pytest.mark.skipif(
    sandbox_confine.landlock_abi() < 4, reason="needs Landlock with network rules (ABI 4+)"
)
def test_confinement_alone_keeps_the_guarantees_namespaces_give(tmp_path: Path) -> None:
    """As in Gradescope's container: no namespace at all, only Landlock and seccomp."""
    server = _server_module()
    job, shared, home = tmp_path / "job", tmp_path / "shared", tmp_path / "job" / "home"
    home.mkdir(parents=True)
    shared.mkdir()
    (job / "input.txt").write_text("inputs")
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    secret = solutions / "reference.py"
    secret.write_text("SECRET = 1\n")
    secret.chmod(0o644)  # world-readable by mistake: Landlock must not care
    state = server.ServerState(
        config={"hide": [str(solutions)]},
        keep=[sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(torch.__file__))],
        confine=sandbox_confine,
    )
    setup = dict.fromkeys(
        ("network_isolated", "read_only_filesystem", "minimal_view", "paths_hidden"), False
    )
    # A job reads its own module's files and the probes, not another part's files.
    own, other, probes = shared / "modules" / "a", shared / "modules" / "b", shared / "probes"
    for folder, name in ((own, "a.py"), (other, "b.py"), (probes, "probes.py")):
        folder.mkdir(parents=True)
        (folder / name).write_text("X = 1\n")
    job_spec = {
        "job_dir": str(job),
        "submission_dir": str(own),
        "probe_file": str(probes / "probes.py"),
    }
    read_end, write_end = os.pipe()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        child = os.fork()
        if child == 0:  # pragma: no cover (the forked child reports through the pipe)
            try:
                done = server._confine(state, job_spec, setup, str(home))
                seen = {
                    "done": done,
                    "read_secret": _try(lambda: secret.read_text()),
                    "read_job": _try(lambda: (job / "input.txt").read_text()),
                    "read_own": _try(lambda: (own / "a.py").read_text()),
                    "read_probes": _try(lambda: (probes / "probes.py").read_text()),
                    "read_other": _try(lambda: (other / "b.py").read_text()),
                    "write_home": _try(lambda: (home / "x").write_text("x")),
                    "write_job": _try(lambda: (job / "x").write_text("x")),
                    "write_tmp": _try(lambda: (tmp_path / "planted").write_text("x")),
                    "connect": _try(lambda: socket.create_connection(("127.0.0.1", port), 1)),
                    "udp": _try(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                }
                os.write(write_end, json.dumps(seen).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            seen = json.loads(pipe.read())
        os.waitpid(child, 0)
    assert seen["done"] == {
        "landlock": True,
        "seccomp": True,
        "network_isolated": True,
        "read_only_filesystem": True,
        "minimal_view": True,
        "paths_hidden": True,
    }
    assert seen["read_secret"] == "PermissionError"
    assert (seen["read_job"], seen["write_home"]) == ("ok", "ok")
    assert (seen["read_own"], seen["read_probes"], seen["read_other"]) == (
        "ok",
        "ok",
        "PermissionError",
    )
    assert seen["write_job"] == seen["write_tmp"] == "PermissionError"
    assert seen["connect"] == seen["udp"] == "PermissionError"
    assert not (tmp_path / "planted").exists()
