"""`batch`: grade every submission under a folder in parallel, resumably, into a gradebook.

The coordinator (this process) runs no tests and imports torch only to record a crashed
worker's submission: it finds the submissions, decides which still need grading, hands
them to worker processes, writes each `report.json` as it arrives, and builds the gradebook
and the staff summary from the reports on disk. Each worker imports torch once and keeps
one pytest loop and one sandbox fork server warm for every submission it grades, so a
submission costs its tests, not a Python start. A worker that dies costs the submission it
held (its row says "grader error") and is replaced; the other submissions go on.

`--executor ray` runs the same per-submission work as Ray tasks on a Ray cluster.
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import functools
import hashlib
import io
import json
import logging
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from grader.assignment import COURSE_ROOT, Assignment, load_assignment
from grader.atomic import write_json_atomic, write_text_atomic
from grader.errors import GraderError, SubmissionError, UsageError
from grader.refcache import ReferenceCache
from grader.results import MAX_DETAIL_CHARS, MAX_NAME_CHARS
from grader.safetext import clean_data, clean_name, entry_key, hashed_entry_key
from grader.similarity import MIN_SHARE, SimilarPair, class_similarity
from grader.submission import JUNK_DIRS, prepare_submission
from grader.summary import points, summarize, write_summary

if TYPE_CHECKING:
    from grader.sandbox import Sandbox

log = logging.getLogger(__name__)

METADATA_FILE = "submission_metadata.yml"
SUBMISSION_SUFFIXES = (".zip", ".ipynb")
REPORT_NAME = "report.json"
# Per-submission reports live in a folder of their own, so no submission's name can land on
# the batch's own outputs (batch.json, gradebook.csv, summary.*) beside it.
REPORTS_DIR = "reports"
STATE_FILE = "batch.json"
SIMILARITY_FILE = "similarity.json"
REGRADE_DIFF_FILE = "regrade-diff.csv"
# Files under the solutions folder that decide scores: the reference and the hidden suites.
GRADING_SUFFIXES = (".py", ".toml", ".json", ".pt")
SCRATCH_PREFIX = "grader-batch-"
EXECUTORS = ("local", "ray")
# A worker that holds one submission longer than this many test time limits is stuck.
WATCHDOG_TEST_LIMITS = 60
# Workers that die before grading anything, in a row, before the batch gives up.
MAX_FAILED_STARTS = 3
# How long an idle worker gets to shut its fork server down before it is killed.
STOP_TIMEOUT_S = 10.0
POLL_S = 5.0
PR_SET_PDEATHSIG = 1

Report = dict[str, Any]


@dataclass(frozen=True)
class Submitter:
    """A person named in Gradescope's metadata; every field is the student's own text."""

    name: str
    email: str = ""
    sid: str = ""

    def __post_init__(self) -> None:
        for name in ("name", "email", "sid"):
            object.__setattr__(self, name, clean_name(getattr(self, name), MAX_NAME_CHARS))


@dataclass(frozen=True)
class BatchItem:
    """One submission under the batch folder."""

    # Unique and stable: the entry's name where that is a safe file name (see `entry_key`);
    # names the submission's folder under --out/reports.
    key: str
    path: Path  # as found, possibly with undecodable bytes (surrogateescape)
    submitters: tuple[Submitter, ...] = ()

    @property
    def student(self) -> str:
        return "; ".join(s.name for s in self.submitters if s.name) or self.key

    @property
    def email(self) -> str:
        return "; ".join(s.email for s in self.submitters if s.email)


@dataclass(frozen=True)
class BatchOptions:
    root: Path
    out_dir: Path
    csv_path: Path
    workers: int
    force: bool = False
    executor: str = "local"
    address: str | None = None
    device: str = "auto"
    seed: int | None = None
    similarity: bool = True


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker needs to grade like `grade` does; travels as JSON."""

    assignment: str
    device: str
    seed: int
    hide: tuple[str, ...] = ()
    # Where workers make their scratch folders ("" = the system's); the coordinator removes
    # it at the end, so even a killed worker leaves nothing behind.
    scratch: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        data = json.loads(text)
        return cls(
            assignment=str(data["assignment"]),
            device=str(data["device"]),
            seed=int(data["seed"]),
            hide=tuple(str(p) for p in data["hide"]),
            scratch=str(data.get("scratch", "")),
        )


@dataclass
class BatchOutcome:
    items: list[BatchItem]
    skipped: list[str] = field(default_factory=list)
    graded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    seed: int = 0


# -- finding submissions ---------------------------------------------------------------------


def read_gradescope_metadata(path: Path) -> dict[str, tuple[Submitter, ...]]:
    """Submission folder -> its submitters, from Gradescope's `submission_metadata.yml`.

    Parsed as data only: PyYAML's safe loader where it is installed, else a reader that
    understands just the submitters' names, emails and ids. Never executes anything.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        import yaml

        data = yaml.safe_load(text)
    except ImportError:
        return _read_metadata_minimal(text)
    except Exception as error:  # e.g. Ruby object tags the safe loader refuses
        log.debug("%s: safe YAML loading failed (%s); reading it line by line", path, error)
        return _read_metadata_minimal(text)
    if not isinstance(data, dict):
        return {}
    people: dict[str, tuple[Submitter, ...]] = {}
    for folder, entry in data.items():
        if not isinstance(entry, dict):
            continue
        entry = {str(k).lstrip(":"): v for k, v in entry.items()}
        submitters = entry.get("submitters")
        if not isinstance(submitters, list):
            continue
        found = []
        for person in submitters:
            if isinstance(person, dict):
                fields = {str(k).lstrip(":"): v for k, v in person.items()}
                found.append(
                    Submitter(
                        name=_text(fields.get("name")),
                        email=_text(fields.get("email")),
                        sid=_text(fields.get("sid")),
                    )
                )
        people[str(folder)] = tuple(found)
    return people


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


_TOP_KEY = re.compile(r"""^(['"]?)([^'"]+?)\1:\s*$""")
_SUBMITTERS = re.compile(r"^:?submitters:\s*$")
_PERSON_FIELD = re.compile(r"^:?(name|email|sid):\s*(.*?)\s*$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _read_metadata_minimal(text: str) -> dict[str, tuple[Submitter, ...]]:
    """Read only `folder: / :submitters: / - :name: ...` from Gradescope's export metadata."""
    people: dict[str, list[dict[str, str]]] = {}
    folder: str | None = None
    list_indent: int | None = None  # indent of the submitters' "- " lines
    field_indent = -1
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if indent == 0:
            match = _TOP_KEY.match(line)
            folder = match.group(2) if match else None
            if folder is not None:
                people[folder] = []
            list_indent = None
            continue
        if folder is None:
            continue
        if list_indent is None:
            if _SUBMITTERS.match(line):
                list_indent = -1  # known once the first "- " line arrives
            continue
        if line.startswith("-") and (list_indent in (-1, indent)):
            list_indent = indent
            people[folder].append({})
            line = line[1:].strip()
            field_indent = indent + 2
        elif list_indent >= 0 and (indent < list_indent or indent == list_indent):
            list_indent = None  # the submitters list ended
            continue
        elif indent != field_indent:
            continue
        match = _PERSON_FIELD.match(line)
        if match and people[folder]:
            people[folder][-1][match.group(1)] = _unquote(match.group(2))
    return {
        key: tuple(
            Submitter(name=p.get("name", ""), email=p.get("email", ""), sid=p.get("sid", ""))
            for p in found
        )
        for key, found in people.items()
    }


def _export_root(root: Path) -> Path:
    """Gradescope's export unzips to one `assignment_..._export` folder: look inside it."""
    if (root / METADATA_FILE).is_file():
        return root
    children = [c for c in root.iterdir() if not c.name.startswith(".")]
    if len(children) == 1 and (children[0] / METADATA_FILE).is_file():
        return children[0]
    return root


def check_submissions_folder(root: Path) -> None:
    """Refuse a batch folder that is not one, before anything else is asked or started."""
    if not root.is_dir():
        raise UsageError(
            f"{root} is not a folder: pass the folder that holds one folder, .zip or notebook "
            "per student (or Gradescope's unzipped 'Export Submissions' folder)."
        )


def discover_submissions(
    root: Path, assignment: Assignment, *, exclude: Iterable[Path] = ()
) -> list[BatchItem]:
    """One item per student folder, .zip or notebook under `root` (or a Gradescope export)."""
    check_submissions_folder(root)
    root = _export_root(root)
    names = {p.name for p in root.iterdir()}
    if names & set(assignment.files):
        raise UsageError(
            f"{root} holds {', '.join(sorted(names & set(assignment.files)))} itself, so it "
            "looks like one submission; grade it with `python -m grader grade`, or pass the "
            "folder that holds one entry per student."
        )
    metadata = root / METADATA_FILE
    people = read_gradescope_metadata(metadata) if metadata.is_file() else {}
    skip = {p.resolve() for p in exclude}
    entries = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name in JUNK_DIRS or entry.resolve() in skip:
            continue
        if entry.is_symlink():
            log.warning("skipping %s: links are not followed", entry)
            continue
        if entry.is_dir() or (entry.is_file() and entry.suffix.lower() in SUBMISSION_SUFFIXES):
            entries.append(entry)
    if not entries:
        raise UsageError(
            f"no submissions under {root}: expected one folder, .zip or .ipynb per student."
        )
    keys = unique_keys([(entry.name, entry.is_file()) for entry in entries])
    items = []
    for entry, key in zip(entries, keys, strict=True):
        stem = entry.stem if entry.is_file() else entry.name
        submitters = people.get(entry.name) or people.get(stem) or ()
        items.append(BatchItem(key=key, path=entry, submitters=submitters))
    return items


def unique_keys(entries: list[tuple[str, bool]]) -> list[str]:
    """One key per (directory entry name, is a file): distinct, also when compared casefolded.

    A file's key is its stem (`alice` for `alice.zip`), a folder's its name. Of the entries
    whose keys collide, those on the simplest key move on: to their full names, then to their
    names with a hash of their raw bytes (`hashed_entry_key`), until none collide. What is
    still equal (names built to look like another's hashed key) gets a counter, in the order
    of the raw names. So the same folder always gives the same keys, and no two submissions
    ever share a report.
    """
    names = [name for name, _ in entries]
    choices = [
        (
            entry_key(Path(name).stem if is_file else name),
            entry_key(name),
            hashed_entry_key(name),
        )
        for name, is_file in entries
    ]
    levels = [0] * len(entries)
    while True:
        groups: dict[str, list[int]] = {}
        for index, level in enumerate(levels):
            groups.setdefault(choices[index][level].casefold(), []).append(index)
        colliding = []
        for group in groups.values():
            lowest = min(levels[index] for index in group)
            if len(group) > 1 and lowest < 2:
                # An entry already on its full name keeps it while a stem can move instead.
                colliding += [index for index in group if levels[index] == lowest]
        if not colliding:
            break
        for index in colliding:
            levels[index] += 1
    keys = [choices[index][level] for index, level in enumerate(levels)]
    taken: set[str] = set()
    for index in sorted(range(len(names)), key=lambda i: os.fsencode(names[i])):
        key, count = keys[index], 1
        while key.casefold() in taken:
            count += 1
            key = f"{keys[index]}~{count}"
        keys[index] = key
        taken.add(key.casefold())
    return keys


# -- resuming --------------------------------------------------------------------------------


def report_path(out_dir: Path, item: BatchItem) -> Path:
    return out_dir / REPORTS_DIR / item.key / REPORT_NAME


def read_report(path: Path) -> Report | None:
    """A JSON object from disk, every string in it safe to write again; None if unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return clean_data(data, MAX_DETAIL_CHARS) if isinstance(data, dict) else None


def submission_fingerprint(path: Path, assignment: Assignment) -> str:
    """The sha256 that `grade` records for this submission ("" if it cannot be read)."""
    with tempfile.TemporaryDirectory(prefix="grader-fingerprint-") as scratch:
        try:
            return prepare_submission(path, assignment, Path(scratch)).sha256
        except SubmissionError:
            return ""


def grading_stamp(assignment: Assignment) -> dict[str, str]:
    """What graded a report: the grader's version and a hash of the solutions and hidden tests.

    A report whose stamp differs was graded by an older grader or reference, so a batch
    grades it again (after a fix) while it keeps reports already stamped as now.
    """
    from grader import __version__

    digest = hashlib.sha256()
    root = assignment.solutions_dir
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in GRADING_SUFFIXES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    manifest = assignment.directory / "assignment.toml"
    if manifest.is_file():
        digest.update(b"manifest\0" + manifest.read_bytes())
    return {"grader_version": __version__, "solutions_sha256": digest.hexdigest()}


def is_up_to_date(
    report: Report | None,
    *,
    assignment: Assignment,
    seed: int,
    device: str,
    fingerprint: str,
    stamp: dict[str, str] | None = None,
) -> bool:
    """Whether a report on disk already grades this very submission the way we would now."""
    if report is None or report.get("grader_error"):
        return False
    if stamp is not None and any(report.get(key) != value for key, value in stamp.items()):
        return False
    submission = report.get("submission")
    return (
        report.get("assignment") == assignment.id
        and report.get("seed") == seed
        and (device == "auto" or report.get("device") == device)
        and isinstance(submission, dict)
        and bool(fingerprint)
        and submission.get("sha256") == fingerprint
    )


def _batch_seed(state: dict[str, Any], assignment: Assignment, requested: int | None) -> int:
    """--seed, else the seed of the batch being resumed, else a fresh one."""
    if requested is not None:
        return requested
    if state.get("assignment") == assignment.id and isinstance(state.get("seed"), int):
        return int(state["seed"])
    return secrets.randbelow(2**31)


@contextlib.contextmanager
def scratch_folder(stale: object) -> Iterator[Path]:
    """The workers' scratch, removed at the end even if a worker was killed mid-job.

    `stale` is the scratch of a batch that was killed before it could remove its own.
    """
    temporary = Path(tempfile.gettempdir())
    if isinstance(stale, str) and stale:
        old = Path(stale)
        if old.parent == temporary and old.name.startswith(SCRATCH_PREFIX):
            shutil.rmtree(old, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    scratch.chmod(0o711)  # the sandbox users reach their job folders through it
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the per-process grader ------------------------------------------------------------------


class GradingWorker:
    """One warm grading process: torch imported once, one fork server for every submission."""

    def __init__(self, config: WorkerConfig) -> None:
        from grader.grade import GradeSettings, resolve_device, sandbox_settings
        from grader.sandbox import Sandbox

        self.assignment = load_assignment(config.assignment)
        self.settings = GradeSettings(
            device=config.device, seed=config.seed, hide=tuple(Path(p) for p in config.hide)
        )
        device = resolve_device(config.device)
        # A Ray node without the coordinator's scratch folder uses its own temporary folder.
        scratch = config.scratch if config.scratch and Path(config.scratch).is_dir() else None
        self._workdir = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch))
        # Traversable (not listable) so the sandbox user can reach its own job folders.
        self._workdir.chmod(0o711)
        self.sandbox: Sandbox = Sandbox(
            sandbox_settings(self.assignment, self.settings, device), {}, self._workdir / "sandbox"
        )
        self.sandbox.start()
        # Every submission here is graded with the same seed and reference.
        self.reference_cache = ReferenceCache()

    def grade(self, path: Path) -> Report:
        from grader.grade import grade_submission
        from grader.report import report_dict

        result = grade_submission(
            path,
            self.assignment,
            self.settings,
            sandbox=self.sandbox,
            reference_cache=self.reference_cache,
        )
        return report_dict(result)

    def close(self) -> None:
        self.sandbox.close()
        shutil.rmtree(self._workdir, ignore_errors=True)


def crashed_report(assignment: Assignment, message: str, *, seed: int, device: str) -> Report:
    """The report of a submission whose worker died or hung: 0 points, a grader error."""
    from grader.grade import crashed_result
    from grader.report import report_dict

    return report_dict(crashed_result(assignment, message, seed=seed, device=device))


def _die_with_parent(parent: int) -> None:
    """Exit when the coordinator does, even if it is killed without a chance to clean up."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the coordinator was already gone before the line above took effect


def serve_worker(parent: int) -> int:
    """A worker's main loop: a config line, then one JSON job per line on stdin."""
    _die_with_parent(parent)
    # Replies go on a private copy of stdout; anything else printed lands in the worker log.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    config = WorkerConfig.from_json(sys.stdin.readline())
    try:
        worker = GradingWorker(config)
    except Exception as error:
        log.exception("worker start failed")
        reply({"event": "failed", "message": f"{type(error).__name__}: {error}"})
        return 1
    reply({"event": "ready"})
    try:
        for line in sys.stdin:
            job = json.loads(line)
            done: dict[str, Any] = {"event": "done", "key": job["key"]}
            try:
                done["report"] = worker.grade(Path(job["path"]))
            except Exception as error:  # the grader's own failure; the coordinator records it
                log.exception("grading %s failed", job["path"])
                done["error"] = f"{type(error).__name__}: {error}"
            reply(done)
    finally:
        worker.close()
    return 0


# -- executors -------------------------------------------------------------------------------

OnDone = Callable[[BatchItem, Report], None]


@dataclass
class _WorkerProcess:
    slot: int
    process: subprocess.Popen[bytes]
    ready: bool = False
    item: BatchItem | None = None
    since: float = 0.0
    buffer: bytes = b""
    graded: int = 0


class LocalExecutor:
    """Worker processes on this machine, each grading one submission at a time."""

    def __init__(
        self, config: WorkerConfig, assignment: Assignment, *, workers: int, log_dir: Path
    ) -> None:
        self.config = config
        self.assignment = assignment
        self.workers = workers
        self.log_dir = log_dir
        self.watchdog_s = assignment.limits.timeout_s * WATCHDOG_TEST_LIMITS
        self._selector = selectors.DefaultSelector()
        self._failed_starts = 0

    def run(self, items: list[BatchItem], on_done: OnDone) -> None:
        queue = deque(items)
        pool: list[_WorkerProcess] = []
        try:
            for slot in range(min(self.workers, len(items))):
                pool.append(self._start(slot))
            while queue or any(w.item for w in pool):
                for worker in pool:
                    if worker.ready and worker.item is None and queue:
                        self._assign(worker, queue.popleft())
                for worker, lines, ended in self._wait(pool):
                    for message in lines:
                        self._handle(worker, message, on_done)
                    if ended:
                        pool[pool.index(worker)] = self._replace(worker, on_done, queue)
                for worker in pool:
                    if worker.item and time.monotonic() - worker.since > self.watchdog_s:
                        hung = (
                            f"Grading stopped after {self.watchdog_s:g} s without finishing; "
                            "the grader, not the submission's own tests, hung."
                        )
                        pool[pool.index(worker)] = self._replace(
                            worker, on_done, queue, message=hung
                        )
            for worker in pool:
                self._stop(worker)
        finally:
            for worker in pool:
                self._kill(worker)
            self._selector.close()

    def _start(self, slot: int) -> _WorkerProcess:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        # One intra-op thread per torch process, so workers do not fight over the cores.
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(COURSE_ROOT))
        with (self.log_dir / f"worker-{slot}.log").open("ab") as log_file:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from grader.batch import serve_worker; "
                    "sys.exit(serve_worker(int(sys.argv[1])))",
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=COURSE_ROOT,
                env=env,
                start_new_session=True,  # Ctrl-C reaches the coordinator, which stops workers
            )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((self.config.to_json() + "\n").encode())
        process.stdin.flush()
        os.set_blocking(process.stdout.fileno(), False)
        worker = _WorkerProcess(slot=slot, process=process)
        self._selector.register(process.stdout, selectors.EVENT_READ, worker)
        return worker

    def _assign(self, worker: _WorkerProcess, item: BatchItem) -> None:
        assert worker.process.stdin is not None
        worker.item, worker.since = item, time.monotonic()
        job = {"key": item.key, "path": str(item.path.resolve())}
        try:
            worker.process.stdin.write((json.dumps(job) + "\n").encode())
            worker.process.stdin.flush()
        except BrokenPipeError:
            pass  # its end shows up as end-of-file on the next wait

    def _wait(
        self, pool: list[_WorkerProcess]
    ) -> Iterator[tuple[_WorkerProcess, list[dict[str, Any]], bool]]:
        busy = [w.since for w in pool if w.item]
        timeout = POLL_S
        if busy:
            timeout = min(timeout, max(0.0, min(busy) + self.watchdog_s - time.monotonic()))
        for key, _ in self._selector.select(timeout=timeout):
            worker: _WorkerProcess = key.data
            chunk = os.read(key.fd, 1 << 20)
            worker.buffer += chunk
            *complete, worker.buffer = worker.buffer.split(b"\n")
            messages = []
            for line in complete:
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict):
                        messages.append(message)
            yield worker, messages, not chunk

    def _handle(self, worker: _WorkerProcess, message: dict[str, Any], on_done: OnDone) -> None:
        event = message.get("event")
        if event == "ready":
            worker.ready = True
            self._failed_starts = 0
        elif event == "failed":
            log.error("worker %d could not start: %s", worker.slot, message.get("message"))
        elif event == "done" and worker.item and message.get("key") == worker.item.key:
            item, worker.item = worker.item, None
            worker.graded += 1
            report = message.get("report")
            if not isinstance(report, dict):
                report = self._crash(f"The grader failed: {message.get('error', 'no report')}")
            on_done(item, report)

    def _replace(
        self,
        worker: _WorkerProcess,
        on_done: OnDone,
        queue: deque[BatchItem],
        *,
        message: str = "",
    ) -> _WorkerProcess:
        """Record the lost submission, if any, and start a fresh worker in the same slot."""
        self._kill(worker)
        status = worker.process.returncode
        if not worker.ready:
            self._failed_starts += 1
            if self._failed_starts >= MAX_FAILED_STARTS:
                worker_log = self.log_dir / f"worker-{worker.slot}.log"
                raise GraderError(
                    f"batch workers keep failing to start; {worker_log} ends with:\n"
                    + _tail(worker_log)
                )
        if worker.item is not None:
            item, worker.item = worker.item, None
            on_done(
                item,
                self._crash(
                    message
                    or f"The grading worker stopped (exit status {status}) while grading this "
                    "submission; its other submissions were not affected."
                ),
            )
        return self._start(worker.slot) if queue else worker

    def _crash(self, message: str) -> Report:
        return crashed_report(
            self.assignment, message, seed=self.config.seed, device=self.config.device
        )

    def _stop(self, worker: _WorkerProcess) -> None:
        """Let an idle worker close its fork server and scratch folder, then reap it."""
        if worker.process.stdin is not None:
            with contextlib.suppress(OSError):
                worker.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(timeout=STOP_TIMEOUT_S)

    def _kill(self, worker: _WorkerProcess) -> None:
        process = worker.process
        with contextlib.suppress(KeyError, ValueError):
            assert process.stdout is not None
            self._selector.unregister(process.stdout)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _ray_process_worker(config_json: str) -> GradingWorker:
    """This Ray worker process's warm grader.

    Ray reuses a worker process for many tasks, so keeping the grader here pays `import
    torch` and the fork server's start once per process, as the local workers do.
    """
    return GradingWorker(WorkerConfig.from_json(config_json))


def grade_in_ray(config_json: str, path: str) -> Report:
    """The body of one Ray task: grade one submission, return its report."""
    if not Path(path).exists():
        raise GraderError(
            f"{path} is not visible on this Ray node; `batch --executor ray` needs the "
            "submissions (and the course folder) at the same path on every node."
        )
    return _ray_process_worker(config_json).grade(Path(path))


def _ray_environment() -> dict[str, str]:
    """What Ray workers need from here: the course checkout, and the grader's own settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith("GRADER_")}
    env["PYTHONPATH"] = str(COURSE_ROOT)
    return env


class RayExecutor:
    """Ray tasks on an existing cluster (`address`), or on a local instance started here."""

    def __init__(
        self,
        config: WorkerConfig,
        assignment: Assignment,
        *,
        workers: int,
        address: str | None,
    ) -> None:
        self.config = config
        self.assignment = assignment
        self.workers = workers
        self.address = address

    def run(self, items: list[BatchItem], on_done: OnDone) -> None:
        ray = require_ray()
        ray.init(
            address=self.address,
            num_cpus=self.workers if self.address is None else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": _ray_environment()},
        )
        try:
            self._run(ray, items, on_done)
        finally:
            ray.shutdown()

    def _run(self, ray: Any, items: list[BatchItem], on_done: OnDone) -> None:
        device = self.config.device
        if device == "auto":
            device = "cuda" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
        config = replace(self.config, device=device)
        # A grading task is not idempotent enough to retry blindly: a crash is recorded.
        task = ray.remote(grade_in_ray).options(
            num_cpus=1, num_gpus=1 if device == "cuda" else 0, max_retries=0
        )
        pending = {task.remote(config.to_json(), str(item.path.resolve())): item for item in items}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                item = pending.pop(ref)
                try:
                    report = ray.get(ref)
                except Exception as error:  # a crashed worker or the grader's own failure
                    report = crashed_report(
                        self.assignment,
                        f"The Ray task grading this submission failed: {_first_line(error)}",
                        seed=config.seed,
                        device=device,
                    )
                on_done(item, report)


def require_ray() -> Any:
    """The `ray` module, or a UsageError saying how to install it into this checkout's venv."""
    try:
        import ray
    except ImportError:
        python = Path(sys.executable)
        pip = python.with_name("pip")
        install = f"{pip} install -e '.[ray]'" if pip.exists() else f"{python} -m pip install ray"
        raise UsageError(
            f"--executor ray needs Ray, which is not installed for {python}. From the "
            f"checkout's folder ({COURSE_ROOT}): {install}  (or run without --executor ray "
            "to grade on this machine)."
        ) from None
    return ray


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:500] if text else type(error).__name__


# -- the gradebook ---------------------------------------------------------------------------

STATUS_GRADED = "graded"
STATUS_NO_FILES = "no files"
STATUS_GRADER_ERROR = "grader error"
STATUS_NOT_GRADED = "not graded"
# Spreadsheet programs run cells that start with these as formulas.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def report_status(report: Report | None) -> str:
    if report is None:
        return STATUS_NOT_GRADED
    if report.get("grader_error"):
        return STATUS_GRADER_ERROR
    submission = report.get("submission")
    if not isinstance(submission, dict) or not submission.get("files"):
        return STATUS_NO_FILES
    return STATUS_GRADED


def _cell(text: str) -> str:
    """A text cell no spreadsheet will run as a formula (student names are student-chosen)."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def gradebook_rows(
    items: list[BatchItem], reports: dict[str, Report | None], assignment: Assignment
) -> list[dict[str, str]]:
    rows = []
    for item in sorted(items, key=lambda i: i.key):
        report = reports.get(item.key)
        parts = report.get("parts", {}) if report else {}
        row = {
            "student": _cell(item.student),
            "email": _cell(item.email),
            "submission": _cell(item.key),
            "total": points(float(report["score"])) if report else "",
        }
        for part in assignment.parts:
            entry = parts.get(part.id) if isinstance(parts, dict) else None
            row[part.id] = points(float(entry["score"])) if isinstance(entry, dict) else ""
        row["status"] = report_status(report)
        rows.append(row)
    return rows


def write_gradebook(path: Path, rows: list[dict[str, str]], assignment: Assignment) -> None:
    columns = ["student", "email", "submission", "total", *assignment.part_ids().split(", ")]
    columns.append("status")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, buffer.getvalue())


CANVAS_FILE = "gradebook-canvas.csv"
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "    Points Possible"


def canvas_rows(
    items: list[BatchItem], reports: dict[str, Report | None], assignment: Assignment
) -> list[list[str]]:
    """Canvas's gradebook import layout: one row per student, a group's score on each member.

    Canvas matches rows by ID or SIS ids: Gradescope's `sid` goes in SIS User ID and the email
    in SIS Login ID; the Canvas ID and Section stay empty (Canvas fills them from its roster).
    A submission graded with a grader error, or not graded, leaves the score empty, so the
    import does not overwrite a grade with a wrong 0.
    """
    header = [*CANVAS_COLUMNS, assignment.title or assignment.id]
    rows = [header, [CANVAS_POINTS_ROW, "", "", "", "", points(assignment.max_score)]]
    for item in sorted(items, key=lambda i: i.key):
        report = reports.get(item.key)
        status = report_status(report)
        score = points(float(report["score"])) if report and status != STATUS_GRADER_ERROR else ""
        for person in item.submitters or (Submitter(name=item.key),):
            name = _cell(person.name or item.key)
            rows.append([name, "", _cell(person.sid), _cell(person.email), "", score])
    return rows


def write_canvas_gradebook(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    write_text_atomic(path, buffer.getvalue())


# -- the command -----------------------------------------------------------------------------


class _RateColumn(ProgressColumn):
    """Submissions per minute, from rich's recent-speed estimate."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text(f"{speed * 60:.1f}/min" if speed else "-/min", style="cyan")


def _safe_to_hide(path: Path) -> bool:
    """Hiding a folder that holds the grader, Python or the sandbox's scratch would break it."""
    resolved = path.resolve()
    for needed in (COURSE_ROOT, Path(sys.prefix), Path(tempfile.gettempdir())):
        if needed.resolve() == resolved or resolved in needed.resolve().parents:
            log.warning("student code can read %s: hiding it would hide %s too", path, needed)
            return False
    return True


def default_out_dir(root: Path) -> Path:
    return root.resolve().parent / "grading-out"


def _plan(
    items: list[BatchItem],
    out_dir: Path,
    assignment: Assignment,
    seed: int,
    options: BatchOptions,
    stamp: dict[str, str],
) -> tuple[dict[str, Report | None], list[BatchItem], dict[str, Report]]:
    """The reports that stand (unless --force), the submissions still to grade, and the
    earlier reports of those being graded again (for the regrade diff)."""
    reports: dict[str, Report | None] = {}
    todo = []
    earlier: dict[str, Report] = {}
    for item in items:
        existing = read_report(report_path(out_dir, item))
        if existing is not None and not existing.get("grader_error"):
            earlier[item.key] = existing
        if options.force:
            existing = None
        try:
            current = existing is not None and is_up_to_date(
                existing,
                assignment=assignment,
                seed=seed,
                device=options.device,
                fingerprint=submission_fingerprint(item.path, assignment),
                stamp=stamp,
            )
        except Exception:  # whatever it is, grading it again will tell (and record it)
            log.exception("could not check the report of %s; grading it again", item.key)
            current = False
        if current:
            reports[item.key] = existing
            earlier.pop(item.key, None)
        else:
            todo.append(item)
    return reports, todo, earlier


@dataclass(frozen=True)
class ScoreChange:
    key: str
    student: str
    before: float
    after: float
    # Part id -> (before, after), for the parts whose score changed.
    parts: dict[str, tuple[float, float]]

    def line(self) -> str:
        parts = ", ".join(f"{p} {points(a)} -> {points(b)}" for p, (a, b) in self.parts.items())
        change = self.after - self.before
        return (
            f"regraded {self.key}: {points(self.before)} -> {points(self.after)} "
            f"({'+' if change >= 0 else ''}{points(change)})" + (f" [{parts}]" if parts else "")
        )


def score_change(item: BatchItem, before: Report, after: Report) -> ScoreChange:
    def part_scores(report: Report) -> dict[str, float]:
        parts = report.get("parts")
        if not isinstance(parts, dict):
            return {}
        return {str(k): float(v.get("score", 0.0)) for k, v in parts.items() if isinstance(v, dict)}

    old, new = part_scores(before), part_scores(after)
    changed = {
        part: (old.get(part, 0.0), new.get(part, 0.0))
        for part in sorted(set(old) | set(new))
        if abs(old.get(part, 0.0) - new.get(part, 0.0)) >= 0.005
    }
    return ScoreChange(
        item.key, item.student, float(before["score"]), float(after["score"]), changed
    )


def write_regrade_diff(path: Path, changes: list[ScoreChange]) -> None:
    """One row per submission graded again: its total before and after, and what moved."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", "student", "before", "after", "change", "parts changed"])
    for change in sorted(changes, key=lambda c: c.key):
        writer.writerow(
            [
                _cell(change.key),
                _cell(change.student),
                points(change.before),
                points(change.after),
                points(change.after - change.before),
                "; ".join(f"{p}: {points(a)} -> {points(b)}" for p, (a, b) in change.parts.items()),
            ]
        )
    write_text_atomic(path, buffer.getvalue())


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
    )


def _similarity(
    items: list[BatchItem], assignment: Assignment, out_dir: Path, *, enabled: bool
) -> tuple[tuple[SimilarPair, ...], str]:
    """The class's similar pairs (similarity.json, side-by-side pages) and a line about them."""
    if not enabled:
        return (), "Not computed (--no-similarity)."
    try:
        result = class_similarity(items, assignment, out_dir)
    except Exception as error:  # the grades stand without it
        log.exception("code similarity failed")
        return (), f"Code similarity could not be computed: {_first_line(error)}"
    write_json_atomic(
        out_dir / SIMILARITY_FILE,
        {"version": 1, "seconds": result.seconds, "pairs": [asdict(p) for p in result.pairs]},
    )
    return result.pairs, (
        f"{result.submissions} submissions compared part by part in {result.seconds:.1f} s "
        f"(copydetect winnowing; the starter code is boilerplate). Listed: pairs where at least "
        f"{MIN_SHARE:.0%} of one side's code is also in the other."
    )


def run_batch(options: BatchOptions, assignment: Assignment, console: Console) -> BatchOutcome:
    """Grade what under `options.root` is not graded yet; write reports, gradebook, summary."""
    if options.executor not in EXECUTORS:
        raise UsageError(f"--executor {options.executor!r}: use one of {', '.join(EXECUTORS)}.")
    if options.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {options.workers}.")
    if options.executor == "ray":
        require_ray()  # before anything is read, started or printed
    out_dir = options.out_dir.resolve()
    items = discover_submissions(options.root, assignment, exclude=(out_dir,))
    state = read_report(out_dir / STATE_FILE) or {}
    seed = _batch_seed(state, assignment, options.seed)
    stamp = grading_stamp(assignment)
    reports, todo, earlier = _plan(items, out_dir, assignment, seed, options, stamp)
    changes: list[ScoreChange] = []
    outcome = BatchOutcome(items=items, skipped=sorted(reports), seed=seed)
    console.print(
        Text(
            f"{len(items)} submissions under {options.root} · {len(reports)} already graded"
            + (" (use --force to regrade them)" if reports else "")
            + f" · {len(todo)} to grade with {options.workers} {options.executor} worker(s)"
            + (
                f" ({len(earlier)} graded before: their changes go to {REGRADE_DIFF_FILE})"
                if earlier
                else ""
            )
            + f" · seed {seed}"
        )
    )
    progress = _progress(console)
    task = progress.add_task("grading", total=len(todo))

    def on_done(item: BatchItem, report: Report) -> None:
        try:
            report = {**clean_data(report, MAX_DETAIL_CHARS), **stamp}
            write_json_atomic(report_path(out_dir, item), report)
        except Exception as error:  # this submission's row says so; the batch goes on
            log.exception("could not record the report of %s", item.key)
            report = crashed_report(
                assignment,
                f"The grader could not record this submission's report: {_first_line(error)}",
                seed=seed,
                device=options.device,
            )
            with contextlib.suppress(Exception):
                write_json_atomic(report_path(out_dir, item), report)
        reports[item.key] = report
        status = report_status(report)
        (outcome.failed if status == STATUS_GRADER_ERROR else outcome.graded).append(item.key)
        progress.console.print(
            Text(
                f"{item.key}: {report['score']:g} / {report['max_score']:g}  {status}  "
                f"({report.get('duration_s') or 0:.1f} s)",
                style="red" if status == STATUS_GRADER_ERROR else "",
            )
        )
        before = earlier.get(item.key)
        if before is not None and status != STATUS_GRADER_ERROR:
            change = score_change(item, before, report)
            changes.append(change)
            if change.parts or abs(change.after - change.before) >= 0.005:
                progress.console.print(Text(change.line(), style="yellow"))
        progress.advance(task)

    hide = tuple(str(p) for p in (options.root.resolve(), out_dir) if _safe_to_hide(p))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with scratch_folder(stale=state.get("scratch")) as scratch:
            write_json_atomic(
                out_dir / STATE_FILE,
                {"version": 1, "assignment": assignment.id, "seed": seed, "scratch": str(scratch)},
            )
            config = WorkerConfig(assignment.id, options.device, seed, hide, str(scratch))
            executor: LocalExecutor | RayExecutor
            if options.executor == "ray":
                executor = RayExecutor(
                    config, assignment, workers=options.workers, address=options.address
                )
            else:
                executor = LocalExecutor(
                    config, assignment, workers=options.workers, log_dir=out_dir / ".logs"
                )
            if todo:
                with progress:
                    executor.run(todo, on_done)
    finally:
        rows = gradebook_rows(items, reports, assignment)
        write_gradebook(options.csv_path, rows, assignment)
        canvas_path = options.csv_path.with_name(CANVAS_FILE)
        write_canvas_gradebook(canvas_path, canvas_rows(items, reports, assignment))
        if changes:
            write_regrade_diff(out_dir / REGRADE_DIFF_FILE, changes)
    pairs, note = _similarity(items, assignment, out_dir, enabled=options.similarity)
    ordered = sorted(items, key=lambda i: i.key)
    write_summary(
        summarize(assignment, items, reports),
        rows,
        out_dir,
        console,
        students=[(item.key, item.student, reports.get(item.key)) for item in ordered],
        similarity=pairs,
        similarity_note=note,
    )
    console.print(
        Text(
            f"gradebook: {options.csv_path} (Canvas import: {canvas_path})\n"
            f"reports and summary: {out_dir}"
        )
    )
    return outcome
