"""The sandbox on its own: limits from the environment, decoding, output capture, isolation."""

from __future__ import annotations

import importlib.util
import os
import pickle
import socket
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.assignment import Limits
from grader.errors import UsageError
from grader.sandbox import (
    PROTECTION_NAMES,
    TIMEOUT_OVERRIDE_ENV,
    Sandbox,
    SandboxSettings,
    StudentFailure,
    _remove_files_of,
    decode_result,
    limits_from_environment,
    live_processes_of,
    protections_notice,
)

SERVER = Path(__file__).resolve().parent.parent / "grader" / "sandbox_server.py"


def _server_module() -> Any:
    spec = importlib.util.spec_from_file_location("sandbox_server_under_test", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_timeout_override_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = Limits(timeout_s=60)
    monkeypatch.delenv(TIMEOUT_OVERRIDE_ENV, raising=False)
    assert limits_from_environment(limits) == limits
    monkeypatch.setenv(TIMEOUT_OVERRIDE_ENV, "2.5")
    assert limits_from_environment(limits).timeout_s == 2.5
    for bad in ("soon", "0", "-3", "99999"):
        monkeypatch.setenv(TIMEOUT_OVERRIDE_ENV, bad)
        with pytest.raises(UsageError, match=TIMEOUT_OVERRIDE_ENV):
            limits_from_environment(limits)


def _saved(value: Any, path: Path) -> Path:
    torch.save(value, path)
    return path


def test_decode_accepts_plain_data(tmp_path: Path) -> None:
    value = {"y": torch.arange(3.0), "n": [1, 2.5, "x", None, True], "t": (torch.zeros(2),)}
    decoded = decode_result(_saved(value, tmp_path / "ok.pt"))
    assert torch.equal(decoded["y"], value["y"]) and decoded["n"] == value["n"]


def test_decode_refuses_compressed_members(tmp_path: Path) -> None:
    plain = _saved({"y": torch.zeros(1000)}, tmp_path / "plain.pt")
    deflated = tmp_path / "deflated.pt"
    with (
        zipfile.ZipFile(plain) as source,
        zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for member in source.infolist():
            out.writestr(member.filename, source.read(member))
    with pytest.raises(ValueError, match="compressed"):
        decode_result(deflated)


def test_decode_refuses_what_is_not_a_torch_archive_or_too_big(tmp_path: Path) -> None:
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps({"y": 1}))
    with pytest.raises(ValueError, match="format"):
        decode_result(raw)
    big = _saved(torch.zeros(1024), tmp_path / "big.pt")
    with pytest.raises(ValueError, match="cap"):
        decode_result(big, max_bytes=1024)


class Lying(torch.Tensor):
    pass


@pytest.mark.parametrize(
    "value",
    [
        torch.zeros(2).as_subclass(Lying),
        torch.zeros(2, 2).to_sparse(),
        {1: torch.zeros(1)},
    ],
    ids=["subclass", "sparse", "int-key"],
)
def test_decode_refuses_anything_but_plain_types(tmp_path: Path, value: Any) -> None:
    with pytest.raises((TypeError, pickle.UnpicklingError)):
        decode_result(_saved(value, tmp_path / "bad.pt"))


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
    _remove_files_of(uid, [shared])
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


def run(what, port=0, hidden="", canary=""):
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


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid and namespace checks need root")
def test_a_job_is_isolated(live_sandbox: tuple[Sandbox, Path], tmp_path: Path) -> None:
    sandbox, root = live_sandbox
    assert sandbox.protections["off"] == [], sandbox.protections
    canary = tmp_path / "canary"
    canary.write_text("")
    canary.chmod(0o666)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        got = _run(
            sandbox,
            root,
            what="look",
            port=listener.getsockname()[1],
            hidden=str(root / "hidden" / "answer.txt"),
            canary=str(canary),
        )
    assert sandbox.identity is not None and got["uid"] == sandbox.identity.uid
    assert got["groups"] == []
    assert got["pids"] == [1]  # its own pid namespace, with a /proc of its own
    # A private /tmp: its home folder, and the ways back to what is put back read-only (its
    # own job folder, and Python and torch where they live under /tmp, as in a CI checkout).
    put_back = (root, Path(sys.prefix), Path(sys.base_prefix), Path(torch.__file__))
    allowed = {"home"} | {p.parts[2] for p in put_back if p.parts[1:2] == ("tmp",)}
    assert set(got["tmp"]) <= allowed and "home" in got["tmp"]
    assert not got["hidden_exists"]
    assert got["write_canary"] != "ok" and got["write_root"] != "ok"
    assert got["connect"] != "ok"
    assert canary.read_text() == ""


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


def test_the_server_needs_no_grader_imports() -> None:
    """The server runs with `python -I` outside the package: only stdlib and torch."""
    source = SERVER.read_text()
    assert "import grader" not in source and "from grader" not in source


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
    config = {
        "keep": [sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(torch.__file__))],
        "private_dirs": ["/tmp", "/var/tmp", "/dev/shm", str(work)],
        "cover": [os.path.join("/", n) for n in os.listdir("/") if n not in server.SYSTEM_TOP_DIRS],
        "hide": [str(hidden)],
        "limits": {"tmp_mb": 8},
    }
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the forked child reports through the pipe)
        try:
            done = server._isolate(config, [str(job)])
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
    for name in ("read_only_filesystem", "private_tmp", "paths_hidden", "minimal_view"):
        assert seen["done"][name], (name, seen["done"])
    put_back = (tmp_path, Path(sys.prefix), Path(sys.base_prefix), Path(torch.__file__))
    allowed = {"home"} | {p.parts[2] for p in put_back if p.parts[1:2] == ("tmp",)}
    assert set(seen["tmp"]) <= allowed and "home" in seen["tmp"]
    assert seen["job_visible"] and not seen["hidden_exists"]
    assert (seen["write_root"], seen["write_job"]) == ("OSError", "OSError")
    assert canary.read_text() == "" and not Path("/hostile").exists()


def _try(action: Any) -> str:
    try:
        action()
        return "ok"
    except OSError as error:
        return type(error).__name__
