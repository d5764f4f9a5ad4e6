"""`batch`: grade every submission under a folder in parallel, resumably, into a gradebook."""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

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

from grader.assignment import COURSE_ROOT, Assignment
from grader.atomic import write_json_atomic
from grader.batch.discovery import BatchItem, discover_submissions
from grader.batch.gradebook import (
    CANVAS_FILE,
    REGRADE_DIFF_FILE,
    STATUS_GRADER_ERROR,
    ScoreChange,
    canvas_rows,
    gradebook_rows,
    report_status,
    score_change,
    write_canvas_gradebook,
    write_gradebook,
    write_regrade_diff,
)
from grader.batch.resume import Report, batch_seed, grading_stamp, plan, read_report, report_path
from grader.batch.stats import summarize
from grader.batch.summary import write_summary
from grader.batch.workers import (
    SCRATCH_PREFIX,
    LocalExecutor,
    RayExecutor,
    WorkerConfig,
    crashed_report,
    first_line,
    require_ray,
)
from grader.errors import UsageError
from grader.results import MAX_DETAIL_CHARS
from grader.safetext import clean_data
from grader.similarity import MIN_SHARE, SimilarPair, class_similarity

log = logging.getLogger(__name__)


STATE_FILE = "batch.json"
SIMILARITY_FILE = "similarity.json"
EXECUTORS = ("local", "ray")


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


@dataclass
class BatchOutcome:
    items: list[BatchItem]
    skipped: list[str] = field(default_factory=list)
    graded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    seed: int = 0


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
        return (), f"Code similarity could not be computed: {first_line(error)}"
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
    seed = batch_seed(state, assignment, options.seed)
    stamp = grading_stamp(assignment)
    start = plan(
        items,
        out_dir,
        assignment,
        seed=seed,
        device=options.device,
        force=options.force,
        stamp=stamp,
    )
    reports, todo, earlier = start.reports, start.todo, start.earlier
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
                f"The grader could not record this submission's report: {first_line(error)}",
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
