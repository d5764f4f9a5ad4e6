"""The hostile-submission suite: every attack in tests/hostile/ graded end to end through `grade`.

Like the hostile program suites of contest judges, each folder in tests/hostile/ is one
attack, named after it, holding only what differs from the reference solution of the
assignment it attacks (solutions/<assignment>/*.py) and an `expected.toml`:

    attack = "what the submission tries"
    assignment = "pytorch_graphs"  # the assignment attacked (default: pytorch_basics)
    max_seconds = 90             # the whole `grade` must finish within this (default 60), plus
                                 # SLACK_PER_BASELINE times the reference's own grading time
    [scores]                     # expected part scores; parts not listed get full marks
    manual_backprop = 0
    [checks]
    listener = true              # a TCP listener on 127.0.0.1 that must receive nothing
    recheck_after_s = 2.0        # read the outputs again this much later (late forgeries)
    unchanged = ["grader/grading/plugin.py"]   # course files that must keep their content
    known_hole = "why"           # expected to fail (strict xfail): a hole outside the sandbox
    evade_integrity_rule = true  # run the case's refused .py code past the rule (tests/support.py)

Files are used as they are, except `<name>.prepend.py` and `<name>.append.py`, whose code
is put before (right after `from __future__ import annotations`) or after the reference's
`<name>`, and `<name>.hostile`, copied as `<name>`: files that pytest or Python would pick
up by their name (conftest.py, pytest.ini, sitecustomize.py, torch.py) must never lie in
this repository under that name. A `build.py` with `build(folder: Path) -> Path` turns the
prepared folder into what is graded (a zip, links, FIFOs...). In every text file,
`__HOSTILE_PORT__` becomes the listener's port, `__HOSTILE_CANARY__` a world-writable file
that must not change (and `__HOSTILE_CANARY__.pwned` must never appear: hostile code
creates it when it has run somewhere it should not), and `__HOSTILE_OUTPUTS__` the folder
of the case's report.json (world-writable, to give forgers every chance).

Every case is checked for: exit status 0 and no grader error; exactly the expected part
scores; the time bound; no live process of the sandbox's uid once grading has returned;
no file owned by that uid anywhere we look; the canary untouched; report.json valid and
adding up; a secret in the grader's environment nowhere in the outputs; no test that
failed for an internal reason; feedback within a size bound.

The cases of each assignment, and its unmodified reference, are graded by one `python -m
grader batch`, as staff grade a class: two warm workers (this is a 2-core machine), each
grading its cases one after another with one `import torch`, with a short per-test time
limit (GRADER_TEST_TIMEOUT_S). So every attack also runs in a worker that graded other
submissions before it and grades others after it. The same attacks go through `grade`, one
process each, in the Gradescope container (docker/container_test.py). The time bound is a
bound on what an attack adds to the reference's grading time in the same batch, so it grows
with how long honest grading takes on the machine right now (a loaded CI machine is slower).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader.course.manifest import load_assignment
from grader.sandbox.identity import SANDBOX_UID_BASE, live_processes_of
from grader.sandbox.scratch import scratch_folder
from tests.deep_folders import files_under, remove_tree
from tests.support import (
    COURSE_ROOT,
    SOLUTIONS_DIR,
    evading_the_integrity_rule,
    grade_to_report,
    refused_by_the_integrity_rule,
    run_grader_cli,
)

# The assignment a case attacks unless its expected.toml names another: the first one, whose
# parts the harness's protections were first built against.
ASSIGNMENT = SOLUTIONS_DIR.name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HOSTILE_DIR = Path(__file__).parent / "hostile"


def part_points(assignment: str) -> dict[str, float]:
    """Each part's points, as the assignment's manifest gives them."""
    parts = load_assignment(assignment, root=COURSE_ROOT / "assignments").parts
    return {part.id: float(part.points) for part in parts}


def part_files(assignment: str) -> list[str]:
    return [
        part.file for part in load_assignment(assignment, root=COURSE_ROOT / "assignments").parts
    ]


PART_POINTS = part_points(ASSIGNMENT)
WORKERS = 2
# The whole batch: about 65 cases, two at a time.
BATCH_TIMEOUT_S = 1800
TEST_TIMEOUT_S = "5"
DEFAULT_MAX_SECONDS = 60.0
SLACK_PER_BASELINE = 3.0
# Two streams of max_output_kb (64 KiB) each, plus the message.
MAX_FEEDBACK_CHARS = 150_000
# The batch's logs and stderr, for every case together.
MAX_LOG_BYTES = 1 << 20
INTERNAL_PROBLEM = "because of an internal problem"
IGNORED_TREES = {".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0,
        reason="the hostile suite checks the root-only protections (CI runs as root)",
    ),
]


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    expected: dict[str, Any]

    @property
    def checks(self) -> dict[str, Any]:
        return dict(self.expected.get("checks", {}))

    @property
    def assignment(self) -> str:
        return str(self.expected.get("assignment", ASSIGNMENT))

    @property
    def scores(self) -> dict[str, float]:
        scores = part_points(self.assignment)
        scores.update({part: float(v) for part, v in self.expected.get("scores", {}).items()})
        return scores


@dataclass
class Outcome:
    """Everything a case's checks need, gathered right when its `grade` returned."""

    # The batch that graded every case.
    process: subprocess.CompletedProcess[str]
    # The case's own grading time, in its warm worker (report.json's duration_s).
    seconds: float
    report: dict[str, Any]
    report_text: str
    uid_alive: list[int]
    owned_files: list[str]
    canary_changed: bool
    pwned: bool
    received: list[bytes]
    changed_files: list[str]
    late_outputs_differ: bool
    secret: str
    # The whole batch's: its workers' logs and its stderr.
    log_bytes: int
    notes: list[str] = field(default_factory=list)


def load_cases() -> list[Case]:
    cases = []
    for folder in sorted(p for p in HOSTILE_DIR.iterdir() if p.is_dir()):
        expected = tomllib.loads((folder / "expected.toml").read_text(encoding="utf-8"))
        case = Case(folder.name, folder, expected)
        unknown = set(expected.get("scores", {})) - set(part_points(case.assignment))
        assert not unknown, f"{folder.name}/expected.toml names unknown parts {unknown}"
        cases.append(case)
    return cases


CASES = {case.name: case for case in load_cases()}


def baseline_name(assignment: str) -> str:
    """The case of `assignment`'s unmodified reference, graded in the same batch as its
    attacks, to measure honest grading on this machine, now."""
    return f"no-attack-baseline-{assignment}"


class Listener:
    """A loopback TCP server that records whatever reaches it."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1.0)
                try:
                    self.received.append(b"<connected>" + connection.recv(65536))
                except OSError:
                    self.received.append(b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


def _splice(reference: str, prepend: str = "", append: str = "") -> str:
    """Put `prepend` right after the reference's __future__ import, and `append` at its end."""
    marker = "from __future__ import annotations\n"
    if prepend:
        head, found, tail = reference.partition(marker)
        reference = head + found + prepend + tail if found else prepend + reference
    return reference + ("\n" + append if append else "")


def build_submission(case: Case, work: Path, replacements: dict[str, str]) -> Path:
    """The case's submission: the reference with the case's files laid over it."""
    folder = work / "submission"
    folder.mkdir()
    solutions = COURSE_ROOT / "solutions" / case.assignment
    for name in part_files(case.assignment):
        shutil.copy(solutions / name, folder / name)
    for path in sorted(case.folder.rglob("*")):
        relative = path.relative_to(case.folder)
        if (
            path.is_dir()
            or path.name in ("expected.toml", "build.py")
            or "__pycache__" in str(relative)
        ):
            continue
        relative = relative.with_name(relative.name.removesuffix(".hostile"))
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(data)
            continue
        for key, value in replacements.items():
            text = text.replace(key, value)
        if case.checks.get("evade_integrity_rule") and refused_by_the_integrity_rule(text):
            text = evading_the_integrity_rule(text, path.name)
        for kind in ("prepend", "append"):
            suffix = f".{kind}.py"
            if path.name.endswith(suffix):
                target = folder / relative.with_name(path.name.removesuffix(suffix) + ".py")
                current = target.read_text(encoding="utf-8")
                target.write_text(_splice(current, **{kind: text}), encoding="utf-8")
                break
        else:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text, encoding="utf-8")
    builder = case.folder / "build.py"
    if builder.exists():
        namespace: dict[str, Any] = {"__file__": str(builder)}
        exec(compile(builder.read_text(encoding="utf-8"), str(builder), "exec"), namespace)
        return Path(namespace["build"](folder))
    return folder


def _files_owned_by(uid: int, roots: list[tuple[Path, int]]) -> list[str]:
    """Files and folders owned by `uid` under each root, down to the given depth."""
    found = []
    for root, depth in roots:
        base = len(root.parts)
        for current, dirs, files in os.walk(root):
            here = Path(current)
            dirs[:] = [d for d in dirs if d not in IGNORED_TREES and len(here.parts) - base < depth]
            for name in dirs + files:
                with_name = here / name
                try:
                    if with_name.lstat().st_uid == uid:
                        found.append(str(with_name))
                except OSError:
                    continue
    return found


def _digest(paths: list[Path]) -> dict[str, str]:
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"
        for path in paths
    }


def grading_environment() -> dict[str, str]:
    """This process's environment without pytest's variables, for the `grade` it starts."""
    return {k: v for k, v in os.environ.copy().items() if not k.startswith("PYTEST")}


@dataclass
class Prepared:
    """A case laid out for the batch, with what its checks compare against afterwards."""

    case: Case
    entry: Path
    exposed: Path
    outputs: Path
    canary: Path
    listener: Listener | None
    watched: list[Path]
    watched_before: dict[str, str]
    entry_before: dict[str, str]


def prepare_case(case: Case, work: Path, batch_dir: Path, reports_dir: Path) -> Prepared:
    """Build the case's submission as an entry of the batch, beside its canary and listener."""
    # World-writable places, so that only the sandbox (not file modes) keeps attacks out.
    exposed = Path(f"/tmp/torch-grader-hostile-{case.name}-{secrets.token_hex(4)}")
    exposed.mkdir(mode=0o777)
    exposed.chmod(0o777)
    outputs = reports_dir / case.name  # where the batch writes this case's report.json
    outputs.mkdir(mode=0o777, parents=True)
    outputs.chmod(0o777)
    canary = exposed / "canary.txt"
    canary.write_text("the grader's canary\n")
    canary.chmod(0o666)
    listener = Listener() if case.checks.get("listener") else None
    replacements = {
        "__HOSTILE_PORT__": str(listener.port if listener else 9),
        "__HOSTILE_CANARY__": str(canary),
        "__HOSTILE_OUTPUTS__": str(outputs),
    }
    built = build_submission(case, work, replacements)
    # The batch's key is the entry's name without its suffix: the case's name.
    entry = batch_dir / (case.name + ("" if built.is_dir() else built.suffix))
    built.rename(entry)
    watched = [COURSE_ROOT / name for name in case.checks.get("unchanged", ())]
    return Prepared(
        case=case,
        entry=entry,
        exposed=exposed,
        outputs=outputs,
        canary=canary,
        listener=listener,
        watched=watched,
        watched_before=_digest(watched),
        entry_before=_entry_digest(entry),
    )


def _entry_digest(entry: Path) -> dict[str, str]:
    return _digest([p for p in files_under(entry) if p.is_file()] if entry.is_dir() else [entry])


@dataclass
class BatchRun:
    process: subprocess.CompletedProcess[str]
    # Processes and files of the sandbox uids once the batch returned, by uid.
    alive: dict[int, list[int]]
    owned: dict[int, list[str]]
    # What the batch's workers wrote to their logs, in bytes.
    log_bytes: int


def run_batch(
    assignment: str, batch_dir: Path, out_dir: Path, secret: str, environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Grade every prepared case with one `batch`, as staff grade a class: warm workers."""
    env = dict(
        environment,
        GRADER_TEST_TIMEOUT_S=TEST_TIMEOUT_S,
        HOSTILE_SECRET=secret,
        # Named like the grader's own settings, which a grading worker keeps only by name.
        GRADER_HOSTILE_SECRET=secret,
    )
    return run_grader_cli(
        *("batch", batch_dir, "--out", out_dir, "-a", assignment, "--seed", "12345"),
        *("--device", "cpu", "--no-similarity", "--workers", str(WORKERS)),
        timeout=BATCH_TIMEOUT_S,
        environment=env,
    )


def observe_case(prepared: Prepared, batch: BatchRun, secret: str) -> Outcome:
    """Everything the case's checks need, read once the batch has returned."""
    report_path = prepared.outputs / "report.json"
    report_text = report_path.read_text(encoding="utf-8")
    report = json.loads(report_text)
    uid = int(report["environment"]["sandbox"]["uid"])
    late_differ = False
    if prepared.case.checks.get("recheck_after_s"):
        time.sleep(float(prepared.case.checks["recheck_after_s"]))
        late_differ = report_path.read_text(encoding="utf-8") != report_text
    changed = [
        path
        for path, digest in _digest(prepared.watched).items()
        if prepared.watched_before[path] != digest
    ]
    changed += [
        f"submission: {path}"
        for path, digest in _entry_digest(prepared.entry).items()
        if prepared.entry_before.get(path) != digest
    ]
    canary = prepared.canary
    return Outcome(
        process=batch.process,
        seconds=float(report["duration_s"]),
        report=report,
        report_text=report_text,
        uid_alive=batch.alive.get(uid, []),
        owned_files=batch.owned.get(uid, []),
        canary_changed=canary.read_text() != "the grader's canary\n"
        or stat.S_IMODE(canary.stat().st_mode) != 0o666,
        pwned=Path(f"{canary}.pwned").exists(),
        received=list(prepared.listener.received) if prepared.listener else [],
        changed_files=changed,
        late_outputs_differ=late_differ,
        secret=secret,
        log_bytes=batch.log_bytes + len(batch.process.stderr.encode()),
    )


@pytest.fixture(scope="module")
def hostile_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Outcome]]]:
    """Every selected case, with the unmodified reference of its assignment, graded by one
    `batch` per assignment in the background; each test then waits for its own outcome."""
    names = [
        str(item.callspec.params["case"])
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_hostile_case"
    ]
    no_changes = tmp_path_factory.mktemp("no-changes")  # a case folder with nothing in it
    by_assignment: dict[str, list[Case]] = {}
    for name in names:
        by_assignment.setdefault(CASES[name].assignment, []).append(CASES[name])
    # Read here, in pytest's thread: pytest sets and unsets PYTEST_CURRENT_TEST while the
    # cases run, and iterating os.environ from another thread then fails.
    environment = grading_environment()
    secret = secrets.token_hex(16)
    batches: list[tuple[str, Path, list[Prepared]]] = []
    for assignment, attacks in by_assignment.items():
        baseline = Case(baseline_name(assignment), no_changes, {"assignment": assignment})
        root = tmp_path_factory.mktemp(f"hostile-batch-{assignment}")
        batch_dir, out_dir = root / "submissions", root / "out"
        batch_dir.mkdir()
        prepared = [
            prepare_case(case, tmp_path_factory.mktemp(case.name), batch_dir, out_dir / "reports")
            for case in (baseline, *attacks)
        ]
        batches.append((assignment, root, prepared))

    def grade_all(assignment: str, root: Path) -> BatchRun:
        batch_dir, out_dir = root / "submissions", root / "out"
        process = run_batch(assignment, batch_dir, out_dir, secret, environment)
        uids = sorted(_sandbox_uids(out_dir / "reports"))
        roots = [(COURSE_ROOT, 50), (root, 50), (Path("/tmp"), 3)]
        roots += [(Path(p), 3) for p in ("/var/tmp", "/dev/shm") if Path(p).is_dir()]
        return BatchRun(
            process=process,
            alive={uid: live_processes_of(uid) for uid in uids},
            owned={uid: _files_owned_by(uid, roots) for uid in uids},
            log_bytes=sum(log.stat().st_size for log in (out_dir / ".logs").glob("*")),
        )

    def outcome(batch: Future[BatchRun], case: Prepared) -> Outcome:
        return observe_case(case, batch.result(), secret)

    # One batch at a time: each uses both cores with its two workers.
    with ThreadPoolExecutor(max_workers=1) as pool:
        runs = {
            assignment: pool.submit(grade_all, assignment, root) for assignment, root, _ in batches
        }
        with ThreadPoolExecutor(max_workers=1) as observers:
            yield {
                case.case.name: observers.submit(outcome, runs[assignment], case)
                for assignment, _, prepared in batches
                for case in prepared
            }
    for _, root, prepared in batches:
        for case in prepared:
            if case.listener:
                case.listener.close()
            shutil.rmtree(case.exposed, ignore_errors=True)
        remove_tree(root)  # a case may nest folders deeper than shutil.rmtree can recurse


def _sandbox_uids(reports_dir: Path) -> set[int]:
    uids = set()
    for report in reports_dir.glob("*/report.json"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            uids.add(int(json.loads(report.read_text())["environment"]["sandbox"]["uid"]))
    return uids


def _case_params() -> list[Any]:
    params = []
    for name, case in CASES.items():
        hole = case.checks.get("known_hole")
        marks = [pytest.mark.xfail(strict=True, reason=hole)] if hole else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def _describe(outcome: Outcome) -> str:
    lines = [f"exit {outcome.process.returncode} after {outcome.seconds:.1f} s"]
    for test in outcome.report["tests"]:
        first = test["message"].splitlines()[0] if test["message"] else ""
        lines.append(f"  {test['outcome']:8} {test['part']} · {test['name']}: {first[:150]}")
    lines.append(outcome.process.stderr[-3000:])
    return "\n".join(lines)


@pytest.mark.parametrize("case", _case_params())
def test_hostile_case(case: str, hostile_runs: dict[str, Future[Outcome]]) -> None:
    spec = CASES[case]
    outcome = hostile_runs[case].result()
    report = outcome.report
    described = _describe(outcome)

    assert outcome.process.returncode == 0, described
    assert report["grader_error"] is None, report["grader_error"]
    scores = {part: entry["score"] for part, entry in report["parts"].items()}
    assert scores == pytest.approx(spec.scores, abs=1e-3), described
    baseline = hostile_runs[baseline_name(spec.assignment)].result()
    assert baseline.report["score"] == pytest.approx(sum(part_points(spec.assignment).values()))
    limit = float(spec.expected.get("max_seconds", DEFAULT_MAX_SECONDS))
    limit += SLACK_PER_BASELINE * baseline.seconds
    assert outcome.seconds <= limit, (
        f"took {outcome.seconds:.1f} s, bound {limit:.1f} s (honest grading: "
        f"{baseline.seconds:.1f} s)"
    )

    # Nothing of the student's survives, and nothing outside its sandbox changed.
    assert outcome.uid_alive == [], f"processes of the sandbox uid survived: {outcome.uid_alive}"
    assert outcome.owned_files == [], f"files the student left: {outcome.owned_files[:20]}"
    assert not outcome.canary_changed, "the canary file was changed"
    assert not outcome.pwned, "hostile code ran where it should not have"
    assert outcome.received == [], f"the loopback listener was reached: {outcome.received}"
    assert outcome.changed_files == [], f"changed: {outcome.changed_files}"
    assert not outcome.late_outputs_differ, "the outputs changed after grade returned"
    # Staff read the logs: nothing a student writes reaches them unbounded.
    assert outcome.log_bytes <= MAX_LOG_BYTES, f"the batch logged {outcome.log_bytes} bytes"

    # The outputs are the grader's own, complete and consistent.
    assert "forged" not in outcome.report_text
    assert sum(t["score"] for t in report["tests"]) == pytest.approx(report["score"], abs=1e-3)
    everything = outcome.report_text + outcome.process.stdout
    assert outcome.secret not in everything + outcome.process.stderr, "a secret leaked"
    for test in report["tests"]:
        assert INTERNAL_PROBLEM not in test["message"], f"{test['name']}: {test.get('detail')}"
        # A figure is ranked only where the work it measures compared right.
        assert not (test.get("leaderboard") and test.get("waits_for")), test["name"]
        feedback = test["message"] + test.get("output", "")
        assert len(feedback) <= MAX_FEEDBACK_CHARS, f"{test['name']}: {len(feedback)} chars"


def _descendants(pid: int) -> set[int]:
    found, pending = set(), [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue  # it ended while we walked the tree
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    pending.append(child)
    return found


def _uid(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return -1
    return int(status.split("\nUid:", 1)[1].split()[0])


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_grader_killed_mid_run_leaves_a_valid_result_and_no_student_process(
    tmp_path: Path,
) -> None:
    """As an out-of-memory kill of the grader would: SIGKILL while student code sleeps."""
    case = Case("killed-grader", tmp_path, {})
    (tmp_path / "manual_backprop.prepend.py").write_text("import time\ntime.sleep(600)\n")
    work = tmp_path / "work"
    work.mkdir()
    submission = build_submission(case, work, {})
    results = tmp_path / "results.json"
    env = grading_environment()
    # Its scratch folder in a root of its own (traversable, as the sandbox users need).
    scratch_root = Path(tempfile.mkdtemp(prefix="killed-grader-scratch-"))
    scratch_root.chmod(0o711)
    env.update(PYTHONPATH=str(COURSE_ROOT), GRADER_TEST_TIMEOUT_S="300", TMPDIR=str(scratch_root))
    command = [sys.executable, "-m", "grader", "grade", str(submission), "-a", ASSIGNMENT]
    grader = subprocess.Popen(
        [*command, "--results", str(results)],
        cwd=COURSE_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        # Wait until the sleeper runs, as its own uid, somewhere below the grader: a student
        # process still there half a second later (the other parts' tests take milliseconds).
        seen: set[int] = set()
        while time.monotonic() < deadline:
            students = {p for p in _descendants(grader.pid) if _uid(p) >= SANDBOX_UID_BASE}
            if students & seen:
                break
            seen = students
            time.sleep(0.5)
        below = _descendants(grader.pid)
        assert students & seen & below, "the sleeping student process never ran"
        provisional = json.loads(results.read_text(encoding="utf-8"))
        grader.kill()
        grader.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in below):
            time.sleep(0.1)
        assert not [pid for pid in below if _alive(pid)], "processes outlived the grader"
        assert json.loads(results.read_text(encoding="utf-8")) == provisional
        assert provisional["score"] == 0
        assert any("grader_error" in test.get("tags", ()) for test in provisional["tests"])
        # What the killed grade could not remove, the next grade's scratch folder sweeps.
        left = [p for p in scratch_root.iterdir() if p.name.startswith("grader-")]
        assert left, "the killed grader left no scratch folder: nothing was tested"
        with scratch_folder("grader-", scratch_root) as fresh:
            now = [p.name for p in scratch_root.iterdir() if p.name.startswith("grader-")]
            assert now == [fresh.name]
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
        shutil.rmtree(scratch_root, ignore_errors=True)


def test_a_part_that_sleeps_under_the_test_limit_runs_out_of_its_budget(tmp_path: Path) -> None:
    """Correct code that sleeps at import, just under the test limit: every test imports the
    file afresh, so without a budget per part it held a grade for tests x limit (with 60 s
    limits and a 58 s sleep, an hour in a batch) and still scored full marks.

    Graded alone, with its own limits: the shared hostile batch keeps the manifest's budget,
    which its busy workers need.
    """
    case = Case("sleep-under-the-test-limit", tmp_path, {})
    (tmp_path / "autograd_loop.prepend.py").write_text("import time\ntime.sleep(3.5)\n")
    work = tmp_path / "work"
    work.mkdir()
    submission = build_submission(case, work, {})
    env = grading_environment()
    env.update(GRADER_TEST_TIMEOUT_S="5", GRADER_TEST_PART_BUDGET_S="10")
    started = time.monotonic()
    process, report, _ = grade_to_report(submission, tmp_path, "-a", ASSIGNMENT, environment=env)
    assert process.returncode == 0, process.stderr[-2000:]
    # The part's tests share 10 s: the two losses tests run (3 + 3 of 15 weights), the third
    # is stopped when the budget runs out while it imports, and the rest are not run.
    scores = {part: entry["score"] for part, entry in report["parts"].items()}
    assert scores == {**PART_POINTS, "autograd_loop": 6.0}
    messages = [t["message"] for t in report["tests"] if t["part"] == "autograd_loop"]
    assert "10 s they get together, so this test was stopped" in messages[2]
    assert all("so this test was not run" in message for message in messages[3:])
    assert time.monotonic() - started < 60


def test_every_case_is_documented() -> None:
    """Each case says what it attacks; the suite covers at least 40 attacks."""
    assert len(CASES) >= 40
    for case in CASES.values():
        assert str(case.expected.get("attack", "")).strip(), f"{case.name}: no `attack` line"
