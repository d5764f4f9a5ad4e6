"""The staff summary of a batch: per-part statistics, the tests failed most often, a score
histogram (PNG, with the optional `stats` extra) and one self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.assignment import Assignment
from grader.atomic import write_json_atomic, write_text_atomic
from grader.safetext import clean_name

if TYPE_CHECKING:
    from grader.batch import BatchItem

# Scores are sums of rounded shares (9.999999 of 10): this close to full marks is full marks.
FULL_MARKS_TOLERANCE = 1e-4
FAILED_OUTCOMES = ("failed", "error", "timeout")
MOST_FAILED_SHOWN = 10
MESSAGE_CHARS = 240
HISTOGRAM_BINS = 10
TEXT_COLUMNS = ("student", "email", "submission", "status")


@dataclass(frozen=True)
class PartStats:
    id: str
    max_score: float
    mean: float
    median: float
    full_marks_rate: float


@dataclass(frozen=True)
class FailedTest:
    part: str
    name: str
    failures: int
    message: str  # the most common first line of its message
    message_count: int


@dataclass(frozen=True)
class BatchSummary:
    assignment: str
    max_score: float
    submissions: int
    # Submissions in the statistics: graded, including those with no usable file (a real 0).
    counted: int
    grader_errors: int
    not_graded: int
    total_mean: float
    total_median: float
    full_marks_rate: float
    parts: tuple[PartStats, ...]
    failed_tests: tuple[FailedTest, ...]
    totals: tuple[float, ...]


def _full(score: float, max_score: float) -> bool:
    return score >= max_score - FULL_MARKS_TOLERANCE


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 4) if values else 0.0


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def summarize(
    assignment: Assignment,
    items: Iterable[BatchItem],
    reports: dict[str, dict[str, Any] | None],
) -> BatchSummary:
    """Statistics over every submission that was graded; grader errors are counted apart."""
    keys = [item.key for item in items]
    counted = [
        report
        for key in keys
        if (report := reports.get(key)) is not None and not report.get("grader_error")
    ]
    totals = [float(r["score"]) for r in counted]
    parts = []
    for part in assignment.parts:
        scores = [float(r["parts"][part.id]["score"]) for r in counted]
        parts.append(
            PartStats(
                id=part.id,
                max_score=part.points,
                mean=_mean(scores),
                median=_median(scores),
                full_marks_rate=_rate([_full(s, part.points) for s in scores]),
            )
        )
    failures: Counter[tuple[str, str]] = Counter()
    messages: dict[tuple[str, str], Counter[str]] = {}
    for report in counted:
        for test in report.get("tests", []):
            if test.get("outcome") not in FAILED_OUTCOMES:
                continue
            key = (clean_name(test.get("part", "")), clean_name(test.get("name", "")))
            failures[key] += 1
            # Messages quote student text: one clean, short line whatever the report holds.
            head = str(test.get("message") or "")[: MESSAGE_CHARS * 4].strip()
            first_line = (head.splitlines() or [""])[0]
            messages.setdefault(key, Counter())[clean_name(first_line, MESSAGE_CHARS)] += 1
    order = {part.id: index for index, part in enumerate(assignment.parts)}
    ranked = sorted(failures.items(), key=lambda kv: (-kv[1], order.get(kv[0][0], 99), kv[0][1]))
    failed_tests = []
    for (part_id, name), count in ranked[:MOST_FAILED_SHOWN]:
        message, message_count = messages[(part_id, name)].most_common(1)[0]
        failed_tests.append(FailedTest(part_id, name, count, message, message_count))
    present = [reports.get(key) for key in keys]
    return BatchSummary(
        assignment=assignment.id,
        max_score=assignment.max_score,
        submissions=len(keys),
        counted=len(counted),
        grader_errors=sum(1 for r in present if r is not None and r.get("grader_error")),
        not_graded=sum(1 for r in present if r is None),
        total_mean=_mean(totals),
        total_median=_median(totals),
        full_marks_rate=_rate([_full(t, assignment.max_score) for t in totals]),
        parts=tuple(parts),
        failed_tests=tuple(failed_tests),
        totals=tuple(totals),
    )


def summary_dict(summary: BatchSummary) -> dict[str, Any]:
    return {"version": 1, **asdict(summary)}


def histogram_png(summary: BatchSummary) -> bytes | None:
    """The distribution of total scores as a PNG, or None without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    # A bare Figure on the Agg canvas: no pyplot, so no global backend or GUI state.
    figure = Figure(figsize=(6.4, 3.2), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    edges = [summary.max_score * i / HISTOGRAM_BINS for i in range(HISTOGRAM_BINS + 1)]
    axes.hist(summary.totals, bins=edges, color="#4c72b0", edgecolor="white")
    axes.set_xlim(0, summary.max_score)
    axes.set_xlabel(f"total score (out of {summary.max_score:g})")
    axes.set_ylabel("submissions")
    axes.set_title(f"{summary.assignment}: {summary.counted} graded submissions")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 70rem;
       padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd;
         vertical-align: top; }
th { background: #f4f4f6; } td.num, th.num { text-align: right;
     font-variant-numeric: tabular-nums; }
.meta { color: #555; } .msg { font-family: ui-monospace, monospace;
     font-size: .85rem; white-space: pre-wrap; }
img { max-width: 100%; }
"""


def _percent(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], classes: dict[int, str]) -> str:
    """An HTML table; `classes` styles columns by index. Every cell is escaped."""

    def cell(tag: str, index: int, text: str) -> str:
        style = f' class="{classes[index]}"' if index in classes else ""
        return f"<{tag}{style}>{html.escape(text)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def summary_html(
    summary: BatchSummary, gradebook: Sequence[dict[str, str]], png: bytes | None
) -> str:
    """One offline page: inline CSS, the histogram embedded as base64, no scripts."""
    title = html.escape(f"{summary.assignment}: batch summary")
    meta = (
        f"{summary.submissions} submissions · {summary.counted} graded · "
        f"{summary.grader_errors} grader errors · {summary.not_graded} not graded"
    )
    scores = (
        f"Mean {summary.total_mean:g}, median {summary.total_median:g} of "
        f"{summary.max_score:g}; full marks: {_percent(summary.full_marks_rate)}."
    )
    image = (
        f'<img alt="histogram of total scores" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}">'
        if png
        else "<p class=meta>No histogram: install the <code>stats</code> extra (matplotlib).</p>"
    )
    parts = _table(
        ["part", "max", "mean", "median", "full marks"],
        (
            [
                part.id,
                f"{part.max_score:g}",
                f"{part.mean:.2f}",
                f"{part.median:g}",
                _percent(part.full_marks_rate),
            ]
            for part in summary.parts
        ),
        classes=dict.fromkeys((1, 2, 3, 4), "num"),
    )
    failed = (
        _table(
            ["part", "test", "failed in", "most common message", "of these"],
            (
                [
                    t.part,
                    t.name,
                    f"{t.failures} of {summary.counted}",
                    t.message,
                    f"{t.message_count} of {t.failures}",
                ]
                for t in summary.failed_tests
            ),
            classes={2: "num", 3: "msg", 4: "num"},
        )
        if summary.failed_tests
        else "<p>No test failed.</p>"
    )
    columns = list(gradebook[0]) if gradebook else []
    book = _table(
        columns,
        ([row[c] for c in columns] for row in gradebook),
        classes={i: "num" for i, c in enumerate(columns) if c not in TEXT_COLUMNS},
    )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{title}</title><style>{_CSS}</style></head><body>"
        f"<h1>{title}</h1><p class=meta>{html.escape(meta)}</p>"
        f"<h2>Scores</h2><p>{html.escape(scores)}</p>{image}"
        f"<h2>Parts</h2>{parts}"
        f"<h2>Tests failed most often</h2>{failed}"
        f"<h2>Gradebook</h2>{book}"
        "</body></html>\n"
    )


def print_summary(summary: BatchSummary, console: Console) -> None:
    table = Table(
        title=(
            f"{summary.assignment}: {summary.counted} graded · mean {summary.total_mean:g} · "
            f"median {summary.total_median:g} / {summary.max_score:g}"
        )
    )
    for column in ("part", "mean", "median", "full marks"):
        table.add_column(column, justify="left" if column == "part" else "right")
    for part in summary.parts:
        table.add_row(
            part.id,
            f"{part.mean:.2f} / {part.max_score:g}",
            f"{part.median:g}",
            _percent(part.full_marks_rate),
        )
    console.print(table)
    for test in summary.failed_tests[:5]:
        # Messages can quote student text: plain Text, never markup.
        console.print(
            Text.assemble((f"{test.failures}×", "red"), f" {test.part} · {test.name}"),
            Text(f"    {test.message}"),
            sep="\n",
        )
    if summary.grader_errors:
        console.print(
            f"[bold red]{summary.grader_errors} submission(s) hit a grader error[/]: their rows "
            "say so; run the same command again to retry them."
        )


def write_summary(
    summary: BatchSummary, gradebook: Sequence[dict[str, str]], out_dir: Path, console: Console
) -> None:
    """summary.json, score-histogram.png and summary.html in `out_dir`, and a table on screen."""
    write_json_atomic(out_dir / "summary.json", summary_dict(summary))
    png = histogram_png(summary)
    if png is not None:
        (out_dir / "score-histogram.png").write_bytes(png)
    write_text_atomic(out_dir / "summary.html", summary_html(summary, gradebook, png))
    print_summary(summary, console)
