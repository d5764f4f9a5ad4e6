"""`batch`: grade every submission under a folder in parallel, resumably, into a gradebook."""

from __future__ import annotations

import contextlib
import logging
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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

from grader.batch.discovery import STATE_FILE, BatchItem, discover_submissions
from grader.batch.fingerprints import MIN_SHARE, SUBMISSION_SECONDS
from grader.batch.gradebook import (
    CANVAS_FILE,
    REGRADE_DIFF_FILE,
    STATUS_GRADER_ERROR,
    STATUS_NO_FILES,
    CanvasGradebook,
    ScoreChange,
    canvas_gradebook,
    gradebook_rows,
    report_status,
    score_change,
    write_canvas_gradebook,
    write_gradebook,
    write_regrade_diff,
)
from grader.batch.policies import late_outcomes, penalised
from grader.batch.resume import (
    ENTRY_KEY,
    Plan,
    batch_seed,
    grading_stamp,
    plan,
    read_state,
    report_path,
)
from grader.batch.similarity import MAX_COMPARED_CHARS, SimilarPair, class_similarity
from grader.batch.stats import summarize
from grader.batch.summary import write_notebook_pages, write_summary
from grader.course.manifest import Assignment
from grader.course.root import PACKAGE_ROOT
from grader.errors import UsageError
from grader.grading.grade import crashed_result
from grader.intake.bounded import RememberedOutcomes, remembering
from grader.intake.safetext import clean_data
from grader.results.atomic import write_json_atomic
from grader.results.model import MAX_DETAIL_CHARS, GradingResult, points
from grader.results.report import Report, report_dict, report_from_dict
from grader.sandbox.scratch import scratch_folder
from grader.workers.executors import EXECUTORS, first_line, make_executor, require_ray
from grader.workers.protocol import SCRATCH_PREFIX, Job, WorkerConfig

log = logging.getLogger(__name__)


SIMILARITY_FILE = "similarity.json"
STOPPED_NOTE = "Not computed: the batch stopped before it finished; run it again to finish it."
# The bounded checks that failed on a submission's content (a source too slow to compile,
# one too slow to tokenise for similarity): kept for the next run, which need not pay again.
BOUNDED_FAILURES_FILE = ".cache/bounded-failures.json"


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


class _RateColumn(ProgressColumn):
    """Submissions per minute since the batch started: rich's recent-speed estimate reads
    thousands a minute when two workers finish together, and nothing once the bar is full."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        if not task.completed or not elapsed:
            return Text("-/min", style="cyan")
        return Text(f"{task.completed / elapsed * 60:.1f}/min", style="cyan")


def _safe_to_hide(path: Path) -> bool:
    """Hiding a folder that holds the grader, Python or the sandbox's scratch would break it."""
    resolved = path.resolve()
    for needed in (PACKAGE_ROOT, Path(sys.prefix), Path(tempfile.gettempdir())):
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
) -> tuple[tuple[SimilarPair, ...] | None, str]:
    """The class's similar pairs (similarity.json, side-by-side pages; None when not
    computed) and a line about them."""
    if not enabled:
        return None, "Not computed (--no-similarity)."
    try:
        result = class_similarity(items, assignment, out_dir)
    except Exception as error:  # the grades stand without it
        log.exception("code similarity failed")
        return None, f"Code similarity could not be computed: {first_line(error)}"
    write_json_atomic(
        out_dir / SIMILARITY_FILE,
        {
            "version": 1,
            "seconds": result.seconds,
            "pairs": [asdict(p) for p in result.pairs],
            "not_compared": list(result.not_compared),
            "out_of_time": list(result.out_of_time),
        },
    )
    skipped = _skipped(f"over {MAX_COMPARED_CHARS:,} characters", result.not_compared) + _skipped(
        f"not tokenised within {SUBMISSION_SECONDS:g} s", result.out_of_time
    )
    return result.pairs, (
        f"{result.submissions} submissions compared part by part in {result.seconds:.1f} s "
        f"(copydetect winnowing; the starter code is boilerplate, and so is code found in more "
        f"than {result.common_above} submissions). Listed: pairs where at least "
        f"{MIN_SHARE:.0%} of one side's code is also in the other.{skipped}"
    )


def _skipped(why: str, files: tuple[str, ...]) -> str:
    """A sentence naming the first files similarity did not compare, and why."""
    if not files:
        return ""
    more = f" and {len(files) - 10} more" if len(files) > 10 else ""
    return f" Not compared, {why} (look at them yourself): {', '.join(files[:10])}{more}."


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
    state = _state_of_this_class(out_dir, assignment)
    seed = batch_seed(state, assignment, options.seed)
    stamp = grading_stamp(assignment)
    # Deciding which reports stand reads every graded submission, and so does similarity:
    # a bounded check pays its bound once per content, not once per pass or per run.
    remembered = (
        RememberedOutcomes()
        if options.force
        else RememberedOutcomes.load(out_dir / BOUNDED_FAILURES_FILE)
    )
    with remembering(remembered):
        start = plan(
            items,
            out_dir,
            assignment,
            seed=seed,
            device=options.device,
            force=options.force,
            stamp=stamp,
        )
    console.print(Text(_opening_line(options, len(items), start, seed)))
    progress = _progress(console)
    recorder = _Recorder(
        out_dir, assignment, start, seed=seed, device=options.device, stamp=stamp, progress=progress
    )
    outcome = BatchOutcome(items=items, skipped=sorted(start.reports), seed=seed)
    hide = tuple(str(p) for p in (options.root.resolve(), out_dir) if _safe_to_hide(p))
    out_dir.mkdir(parents=True, exist_ok=True)
    finished = False
    try:
        with scratch_folder(SCRATCH_PREFIX) as scratch:
            write_json_atomic(
                out_dir / STATE_FILE,
                {"version": 1, "assignment": assignment.id, "seed": seed, "scratch": str(scratch)},
            )
            config = WorkerConfig.for_assignment(
                assignment, device=options.device, seed=seed, hide=hide, scratch=str(scratch)
            )
            executor = make_executor(
                options.executor,
                config,
                assignment,
                workers=options.workers,
                address=options.address,
                log_dir=out_dir / ".logs",
            )
            if start.todo:
                with progress:
                    jobs = [Job(key=item.key, path=str(item.path.resolve())) for item in start.todo]
                    executor.run(jobs, recorder)
        finished = True
    finally:
        outcome.graded, outcome.failed = recorder.graded, recorder.failed
        written = _write_gradebooks(options, out_dir, assignment, items, recorder)
        if not finished:
            # Stopped (Ctrl-C, an executor's failure): the summary of an earlier run must not
            # stand beside this run's gradebook.
            try:
                written.write_summary(out_dir, console, None, STOPPED_NOTE)
            except Exception:
                log.exception("could not write the summary of the stopped batch")
    if assignment.notebook and start.todo:
        # Staff see what a notebook student saw: the pages of the submissions graded now
        # (a report that stands keeps the page written with it).
        graded_now = [(item.key, item.path) for item in start.todo]
        for key, note in write_notebook_pages(graded_now, assignment.notebook, out_dir).items():
            console.print(Text(f"notebook page of {key}: {note}"))
    with remembering(remembered):
        pairs, note = _similarity(items, assignment, out_dir, enabled=options.similarity)
    remembered.save(out_dir / BOUNDED_FAILURES_FILE)
    written.write_summary(out_dir, console, pairs, note)
    if items and all(row.get("status") == STATUS_NO_FILES for row in written.rows):
        console.print(
            Text.assemble(
                ("warning:", "bold yellow"),
                f" none of the {len(items)} submissions holds any of {assignment.id}'s files "
                f"({', '.join(assignment.files)}): is -a the right assignment?",
            )
        )
    for warning in written.canvas.warnings:
        # Quotes names from the submissions' metadata: plain Text, never markup.
        console.print(Text.assemble(("gradebook warning:", "bold yellow"), f" {warning}"))
    console.print(
        Text(
            f"gradebook: {options.csv_path} (Canvas import: {written.canvas_path})\n"
            f"reports and summary: {out_dir}"
        )
    )
    return outcome


def _state_of_this_class(out_dir: Path, assignment: Assignment) -> dict[str, Any]:
    """The batch.json in --out; refused when it is another assignment's (another class's)."""
    state = read_state(out_dir / STATE_FILE)
    if state.get("assignment") not in (None, assignment.id):
        # Grading here would replace every report of that assignment's class.
        raise UsageError(
            f"{out_dir} holds the grades of {state['assignment']!r} ({STATE_FILE}), not of "
            f"{assignment.id!r}: pass another --out for this class (one --out per class), or "
            "check -a."
        )
    return state


@dataclass(frozen=True)
class _Written:
    """What the gradebooks were written from, which the summary reads too."""

    assignment: Assignment
    items: list[BatchItem]
    reports: dict[str, Report | None]
    rows: list[dict[str, str]]
    canvas: CanvasGradebook
    canvas_path: Path

    def write_summary(
        self, out_dir: Path, console: Console, pairs: tuple[SimilarPair, ...] | None, note: str
    ) -> None:
        ordered = sorted(self.items, key=lambda i: i.key)
        write_summary(
            summarize(self.assignment, self.items, self.reports),
            self.rows,
            out_dir,
            console,
            students=[(item.key, item.student, self.reports.get(item.key)) for item in ordered],
            similarity=pairs,
            similarity_note=note,
            gradebook_warnings=self.canvas.warnings,
        )


def _write_gradebooks(
    options: BatchOptions,
    out_dir: Path,
    assignment: Assignment,
    items: list[BatchItem],
    recorder: _Recorder,
) -> _Written:
    """The gradebook, the Canvas import and the regrade diff, from the reports there are."""
    reports = recorder.reports
    late = late_outcomes(items, reports, assignment)
    rows = gradebook_rows(items, reports, assignment, late)
    write_gradebook(options.csv_path, rows, assignment)
    canvas_path = options.csv_path.with_name(CANVAS_FILE)
    canvas = canvas_gradebook(items, penalised(reports, late), assignment)
    write_canvas_gradebook(canvas_path, canvas.rows)
    if recorder.changes:
        write_regrade_diff(
            out_dir / REGRADE_DIFF_FILE,
            recorder.changes,
            late if assignment.policy.late is not None else None,
        )
    return _Written(assignment, items, reports, rows, canvas, canvas_path)


def _opening_line(options: BatchOptions, found: int, start: Plan, seed: int) -> str:
    standing, earlier = len(start.reports), len(start.earlier)
    return (
        f"{found} submissions under {options.root} · {standing} already graded"
        + (" (use --force to regrade them)" if standing else "")
        + f" · {len(start.todo)} to grade with {options.workers} {options.executor} worker(s)"
        + (
            f" ({earlier} graded before: their changes go to {REGRADE_DIFF_FILE})"
            if earlier
            else ""
        )
        + f" · seed {seed}"
    )


class _Recorder:
    """The executors' `on_done`: writes each report as it arrives, says how it went, and
    keeps what the gradebook, the summary and the regrade diff are built from."""

    def __init__(
        self,
        out_dir: Path,
        assignment: Assignment,
        start: Plan,
        *,
        seed: int,
        device: str,
        stamp: dict[str, str],
        progress: Progress,
    ) -> None:
        self.out_dir, self.assignment = out_dir, assignment
        self.seed, self.device, self.stamp = seed, device, stamp
        self.reports: dict[str, Report | None] = dict(start.reports)
        self.earlier = start.earlier
        self.changes: list[ScoreChange] = []
        self.graded: list[str] = []
        self.failed: list[str] = []
        self.progress = progress
        self.task = progress.add_task("grading", total=len(start.todo))
        self.items = {item.key: item for item in start.todo}

    def __call__(self, key: str, result: GradingResult) -> None:
        item = self.items[key]
        report = self._record(item, result)
        self.reports[item.key] = report
        status = report_status(report)
        (self.failed if status == STATUS_GRADER_ERROR else self.graded).append(item.key)
        recorded = report.result
        self.progress.console.print(
            Text(
                f"{item.key}: {points(recorded.score)} / {points(recorded.max_score)}  {status}  "
                f"({recorded.duration_s:.1f} s)",
                style="red" if status == STATUS_GRADER_ERROR else "",
            )
        )
        before = self.earlier.get(item.key)
        if before is not None and status != STATUS_GRADER_ERROR:
            change = score_change(item, before, report)
            self.changes.append(change)
            if change.parts or abs(change.after - change.before) >= 0.005:
                self.progress.console.print(Text(change.line(), style="yellow"))
        self.progress.advance(self.task)

    def _record(self, item: BatchItem, result: GradingResult) -> Report:
        """Check and write one report; a report that cannot be is this submission's error."""
        path = report_path(self.out_dir, item)
        try:
            data = report_dict(result)
            data = {**clean_data(data, MAX_DETAIL_CHARS), **self.stamp, ENTRY_KEY: item.entry}
            report = report_from_dict(data)
            write_json_atomic(path, data)
            return report
        except Exception as error:  # this submission's row says so; the batch goes on
            log.exception("could not record the report of %s", item.key)
            crashed = crashed_result(
                self.assignment,
                f"The grader could not record this submission's report: {first_line(error)}",
                seed=self.seed,
                device=self.device,
            )
            data = report_dict(crashed)
            with contextlib.suppress(Exception):
                write_json_atomic(path, data)
            return report_from_dict(data)
