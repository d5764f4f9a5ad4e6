"""The staff summary of a batch: per-part statistics, why tests failed, the wrong answers
submissions share, a score histogram (inline SVG), one offline HTML page and a page of full
feedback per student."""

from __future__ import annotations

import html
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.assignment import Assignment
from grader.atomic import write_json_atomic, write_text_atomic
from grader.mistakes import CAUSES, WRONG_ANSWER, report_test_cause
from grader.safetext import clean_name

if TYPE_CHECKING:
    from grader.batch import BatchItem
    from grader.similarity import SimilarPair

# Scores are sums of rounded shares (9.999999 of 10): this close to full marks is full marks.
FULL_MARKS_TOLERANCE = 1e-4
FAILED_OUTCOMES = ("failed", "error", "timeout")
MOST_FAILED_SHOWN = 10
CLUSTERS_SHOWN = 20
# Submissions named in one cluster's row of the page (the JSON lists them all).
CLUSTER_MEMBERS_SHOWN = 30
MESSAGE_CHARS = 240
HISTOGRAM_BINS = 10
TEXT_COLUMNS = ("student", "email", "submission", "status")
STUDENTS_DIR = "students"


@dataclass(frozen=True)
class PartStats:
    id: str
    max_score: float
    mean: float
    median: float
    full_marks_rate: float


@dataclass(frozen=True)
class FailedTest:
    """A test that returned wrong answers; its failures count wrong answers only."""

    part: str
    name: str
    failures: int
    message: str  # the most common first line of its message
    message_count: int


@dataclass(frozen=True)
class PartCauses:
    """For one part: how many submissions had at least one test fail for each cause."""

    part: str
    submissions: dict[str, int]


@dataclass(frozen=True)
class MistakeCluster:
    """Submissions whose outputs in one test were the same wrong values."""

    part: str
    name: str
    fingerprint: str
    submissions: tuple[str, ...]
    message: str
    message_count: int
    # Further tests of the part where the same submissions (and only they) shared a wrong
    # answer: one mistake usually fails several parametrised tests alike.
    also: tuple[str, ...] = ()


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
    causes: tuple[PartCauses, ...]
    clusters: tuple[MistakeCluster, ...]
    totals: tuple[float, ...]


def _full(score: float, max_score: float) -> bool:
    return score >= max_score - FULL_MARKS_TOLERANCE


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 4) if values else 0.0


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _first_line(message: object) -> str:
    """Messages quote student text: one clean, short line whatever the report holds."""
    head = str(message or "")[: MESSAGE_CHARS * 4].strip()
    return clean_name((head.splitlines() or [""])[0], MESSAGE_CHARS)


def summarize(
    assignment: Assignment,
    items: Iterable[BatchItem],
    reports: dict[str, dict[str, Any] | None],
) -> BatchSummary:
    """Statistics over every submission that was graded; grader errors are counted apart."""
    keys = [item.key for item in items]
    counted = {
        key: report
        for key in keys
        if (report := reports.get(key)) is not None and not report.get("grader_error")
    }
    totals = [float(r["score"]) for r in counted.values()]
    parts = []
    for part in assignment.parts:
        scores = [float(r["parts"][part.id]["score"]) for r in counted.values()]
        parts.append(
            PartStats(
                id=part.id,
                max_score=part.points,
                mean=_mean(scores),
                median=_median(scores),
                full_marks_rate=_rate([_full(s, part.points) for s in scores]),
            )
        )
    wrong: Counter[tuple[str, str]] = Counter()
    messages: dict[tuple[str, str], Counter[str]] = {}
    causes: dict[str, Counter[str]] = {part.id: Counter() for part in assignment.parts}
    same_wrong: dict[tuple[str, str, str], list[str]] = {}
    for key, report in counted.items():
        report_parts = report.get("parts")
        seen: set[tuple[str, str]] = set()
        for test in report.get("tests", []):
            if test.get("outcome") not in FAILED_OUTCOMES:
                continue
            part_id, name = clean_name(test.get("part", "")), clean_name(test.get("name", ""))
            part_entry = report_parts.get(part_id) if isinstance(report_parts, dict) else None
            cause = report_test_cause(test, part_entry)
            if (part_id, cause) not in seen and part_id in causes:
                seen.add((part_id, cause))
                causes[part_id][cause] += 1
            if cause != WRONG_ANSWER:
                continue
            wrong[(part_id, name)] += 1
            line = _first_line(test.get("message"))
            messages.setdefault((part_id, name), Counter())[line] += 1
            fingerprint = test.get("fingerprint")
            if isinstance(fingerprint, str) and fingerprint:
                same_wrong.setdefault((part_id, name, clean_name(fingerprint, 64)), []).append(key)
    order = {part.id: index for index, part in enumerate(assignment.parts)}
    ranked = sorted(wrong.items(), key=lambda kv: (-kv[1], order.get(kv[0][0], 99), kv[0][1]))
    failed_tests = []
    for (part_id, name), count in ranked[:MOST_FAILED_SHOWN]:
        message, message_count = messages[(part_id, name)].most_common(1)[0]
        failed_tests.append(FailedTest(part_id, name, count, message, message_count))
    clusters = []
    for (part_id, name, fingerprint), members in same_wrong.items():
        if len(members) < 2:
            continue
        lines: Counter[str] = Counter()
        for member in members:
            for test in counted[member].get("tests", []):
                if test.get("name") == name and test.get("fingerprint") == fingerprint:
                    lines[_first_line(test.get("message"))] += 1
        message, message_count = lines.most_common(1)[0] if lines else ("", 0)
        clusters.append(
            MistakeCluster(
                part_id, name, fingerprint, tuple(sorted(members)), message, message_count
            )
        )
    clusters.sort(key=lambda c: (-len(c.submissions), order.get(c.part, 99), c.name))
    merged: dict[tuple[str, tuple[str, ...]], MistakeCluster] = {}
    for cluster in clusters:
        same = (cluster.part, cluster.submissions)
        if same in merged:
            first = merged[same]
            merged[same] = replace(first, also=(*first.also, cluster.name))
        else:
            merged[same] = cluster
    clusters = list(merged.values())
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
        causes=tuple(
            PartCauses(part.id, {cause: causes[part.id][cause] for cause in CAUSES})
            for part in assignment.parts
        ),
        clusters=tuple(clusters[:CLUSTERS_SHOWN]),
        totals=tuple(totals),
    )


def summary_dict(summary: BatchSummary) -> dict[str, Any]:
    return {"version": 2, **asdict(summary)}


def points(value: float) -> str:
    """A score for people to read: at most 2 decimals, no trailing zeros."""
    return f"{round(value, 2):.2f}".rstrip("0").rstrip(".")


# -- the histogram ---------------------------------------------------------------------------

_SVG_WIDTH, _SVG_HEIGHT = 640, 240
_SVG_MARGIN = (40, 20, 40, 16)  # left, top, bottom, right


def histogram_svg(summary: BatchSummary) -> str:
    """The distribution of total scores as an inline SVG (no plotting library needed)."""
    counts = [0] * HISTOGRAM_BINS
    top = summary.max_score or 1.0
    for total in summary.totals:
        index = min(HISTOGRAM_BINS - 1, max(0, int(total / top * HISTOGRAM_BINS)))
        counts[index] += 1
    left, upper, bottom, right = _SVG_MARGIN
    plot_w = _SVG_WIDTH - left - right
    plot_h = _SVG_HEIGHT - upper - bottom
    tallest = max(counts) or 1
    bar_w = plot_w / HISTOGRAM_BINS
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="hist" '
        f'viewBox="0 0 {_SVG_WIDTH} {_SVG_HEIGHT}" width="{_SVG_WIDTH}" height="{_SVG_HEIGHT}">',
        f"<title>{html.escape(summary.assignment)}: total scores of {summary.counted} "
        "graded submissions</title>",
        f'<line x1="{left}" y1="{upper + plot_h}" x2="{left + plot_w}" y2="{upper + plot_h}" '
        'stroke="#333"/>',
        f'<line x1="{left}" y1="{upper}" x2="{left}" y2="{upper + plot_h}" stroke="#333"/>',
        f'<text x="{left - 6}" y="{upper + 4}" text-anchor="end" font-size="11">{tallest}</text>',
        f'<text x="{left - 6}" y="{upper + plot_h}" text-anchor="end" font-size="11">0</text>',
    ]
    for index, count in enumerate(counts):
        height = plot_h * count / tallest
        x = left + index * bar_w
        low = top * index / HISTOGRAM_BINS
        high = top * (index + 1) / HISTOGRAM_BINS
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{upper + plot_h - height:.1f}" width="{bar_w - 2:.1f}" '
            f'height="{height:.1f}" fill="#4c72b0"><title>{points(low)} to {points(high)}: '
            f"{count}</title></rect>"
        )
        if count:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{upper + plot_h - height - 3:.1f}" '
                f'text-anchor="middle" font-size="11">{count}</text>'
            )
        parts.append(
            f'<text x="{x:.1f}" y="{upper + plot_h + 14}" text-anchor="middle" '
            f'font-size="11">{points(low)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w:.1f}" y="{upper + plot_h + 14}" text-anchor="middle" '
        f'font-size="11">{points(top)}</text>'
        f'<text x="{left + plot_w / 2:.1f}" y="{_SVG_HEIGHT - 6}" text-anchor="middle" '
        f'font-size="12">total score (out of {points(top)}); bars count submissions</text>'
        "</svg>"
    )
    return "".join(parts)


# -- HTML ------------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem auto; max-width: 76rem;
       padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; table-layout: auto; }
th, td { text-align: left; padding: .25rem .4rem; border-bottom: 1px solid #ddd;
         vertical-align: top; overflow-wrap: anywhere; }
th { background: #f4f4f6; font-weight: 600; overflow-wrap: normal; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num, td.id { white-space: nowrap; overflow-wrap: normal; }
.meta { color: #555; } .msg { font-family: ui-monospace, monospace;
     font-size: .85rem; white-space: pre-wrap; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f9; padding: .5rem; }
svg.hist { max-width: 100%; height: auto; }
.pass { color: #1a7f37; } .fail { color: #b42318; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.side pre { font-size: .8rem; } mark { background: #ffe08a; }
"""


@dataclass(frozen=True)
class Link:
    """A table cell that links to another page of the summary."""

    text: str
    href: str


Cell = str | Link


def student_file(key: str) -> str:
    """The per-student page's path relative to summary.html (keys are safe file names)."""
    return f"{STUDENTS_DIR}/{key}.html"


def student_href(key: str) -> str:
    """The link to `student_file(key)`: a key may hold spaces, `#`, `%` or `?`."""
    return quote(student_file(key), safe="/")


def _render_cell(value: Cell) -> str:
    if isinstance(value, Link):
        return f'<a href="{html.escape(value.href)}">{html.escape(value.text)}</a>'
    return html.escape(value)


def _table(header: Sequence[str], rows: Iterable[Sequence[Cell]], classes: dict[int, str]) -> str:
    """An HTML table; `classes` styles columns by index. Every cell is escaped."""

    def cell(tag: str, index: int, value: Cell) -> str:
        style = f' class="{classes[index]}"' if index in classes else ""
        text = _render_cell(value)
        if tag == "th":  # long part ids may break after an underscore, not mid-word
            text = text.replace("_", "_<wbr>")
        return f"<{tag}{style}>{text}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page_html(title: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def _number_cell(column: str, value: str) -> str:
    if column in TEXT_COLUMNS or not value:
        return value
    try:
        return points(float(value))
    except ValueError:
        return value


def summary_html(
    summary: BatchSummary,
    gradebook: Sequence[dict[str, str]],
    *,
    links: Sequence[str] = (),
    similarity: Sequence[SimilarPair] = (),
    similarity_note: str = "",
) -> str:
    """One offline page: inline CSS and SVG, no scripts. `links[i]` is row i's student page."""
    meta = (
        f"{summary.submissions} submissions · {summary.counted} graded · "
        f"{summary.grader_errors} grader errors · {summary.not_graded} not graded"
    )
    scores = (
        f"Mean {points(summary.total_mean)}, median {points(summary.total_median)} of "
        f"{points(summary.max_score)}; full marks: {_percent(summary.full_marks_rate)}."
    )
    parts = _table(
        ["part", "max", "mean", "median", "full marks"],
        (
            [
                part.id,
                points(part.max_score),
                points(part.mean),
                points(part.median),
                _percent(part.full_marks_rate),
            ]
            for part in summary.parts
        ),
        classes={0: "id", **dict.fromkeys((1, 2, 3, 4), "num")},
    )
    causes = _table(
        ["part", *CAUSES],
        ([c.part, *(str(c.submissions.get(cause, 0)) for cause in CAUSES)] for c in summary.causes),
        classes={0: "id", **dict.fromkeys(range(1, len(CAUSES) + 1), "num")},
    )
    failed = (
        _table(
            ["part", "test", "wrong in", "most common message", "of these"],
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
            classes={0: "id", 2: "num", 3: "msg", 4: "num"},
        )
        if summary.failed_tests
        else "<p>No test returned a wrong answer.</p>"
    )
    clusters = "".join(_cluster_html(c) for c in summary.clusters) or (
        "<p>No two submissions returned the same wrong values.</p>"
    )
    columns = list(gradebook[0]) if gradebook else []
    rows: list[list[Cell]] = []
    for index, row in enumerate(gradebook):
        cells: list[Cell] = [_number_cell(c, row[c]) for c in columns]
        if index < len(links) and links[index] and "student" in columns:
            position = columns.index("student")
            cells[position] = Link(row["student"] or row.get("submission", "?"), links[index])
        rows.append(cells)
    book = _table(
        columns,
        rows,
        classes={i: "num" for i, c in enumerate(columns) if c not in TEXT_COLUMNS},
    )
    from grader.similarity import similarity_html

    body = (
        f"<p class=meta>{html.escape(meta)}</p>"
        f"<h2>Scores</h2><p>{html.escape(scores)}</p>{histogram_svg(summary)}"
        f"<h2>Parts</h2>{parts}"
        "<h2>Why tests failed</h2><p class=meta>Submissions with at least one test of the "
        f"part failing for each cause.</p>{causes}"
        f"<h2>Wrong answers most often</h2>{failed}"
        f"<h2>Same wrong answers</h2>{clusters}"
        f"<h2>Gradebook</h2>{book}"
        f"<h2>Code similarity</h2>{similarity_html(similarity, similarity_note)}"
    )
    return page_html(f"{summary.assignment}: batch summary", body)


def cluster_sentence(cluster: MistakeCluster) -> str:
    also = f" (and in {len(cluster.also)} more of its tests)" if cluster.also else ""
    return (
        f"{len(cluster.submissions)} submissions returned the same wrong "
        f"{cluster.part} · {cluster.name}{also}; most common message: {cluster.message}"
    )


def _cluster_html(cluster: MistakeCluster) -> str:
    shown = cluster.submissions[:CLUSTER_MEMBERS_SHOWN]
    members = ", ".join(
        f'<a href="{html.escape(student_href(key))}">{html.escape(key)}</a>' for key in shown
    )
    more = len(cluster.submissions) - len(shown)
    if more:
        members += f" and {more} more"
    return f"<p>{html.escape(cluster_sentence(cluster))}<br>Submissions: {members}</p>"


def _percent(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def student_html(key: str, student: str, report: dict[str, Any] | None) -> str:
    """A staff page with one submission's full feedback: every test, its message and output."""
    title = f"{student} ({key})" if student != key else key
    if report is None:
        return page_html(
            title, "<p>Not graded yet.</p><p><a href='../summary.html'>summary</a></p>"
        )
    parts_table = _table(
        ["part", "score", "max", "source", "problem"],
        (
            [
                str(part_id),
                points(float(entry.get("score", 0))),
                points(float(entry.get("max_score", 0))),
                str(entry.get("source", "")),
                str(entry.get("problem", "")),
            ]
            for part_id, entry in (report.get("parts") or {}).items()
            if isinstance(entry, dict)
        ),
        classes={1: "num", 2: "num", 4: "msg"},
    )
    tests = []
    for test in report.get("tests", []):
        outcome = str(test.get("outcome", ""))
        style = "pass" if outcome == "passed" else "fail" if outcome in FAILED_OUTCOMES else ""
        cause = f" · {test['cause']}" if test.get("cause") else ""
        block = (
            f"<h3 class={style}>{html.escape(str(test.get('part', '')))} · "
            f"{html.escape(str(test.get('name', '')))}: {html.escape(outcome + cause)} "
            f"({points(float(test.get('score') or 0))} / "
            f"{points(float(test.get('max_score') or 0))})</h3>"
        )
        for field, label in (("message", ""), ("output", "printed"), ("detail", "staff detail")):
            text = test.get(field)
            if text:
                heading = f"<p class=meta>{label}</p>" if label else ""
                block += f"{heading}<pre>{html.escape(str(text))}</pre>"
        tests.append(block)
    error = report.get("grader_error")
    body = (
        "<p><a href='../summary.html'>back to the summary</a></p>"
        f"<p>Score {points(float(report.get('score', 0)))} of "
        f"{points(float(report.get('max_score', 0)))} · seed {html.escape(str(report.get('seed')))}"
        "</p>"
        + (f"<p class=fail>Grader error:</p><pre>{html.escape(str(error))}</pre>" if error else "")
        + f"<h2>Parts</h2>{parts_table}<h2>Tests</h2>{''.join(tests)}"
    )
    return page_html(title, body)


def print_summary(summary: BatchSummary, console: Console) -> None:
    table = Table(
        title=(
            f"{summary.assignment}: {summary.counted} graded · mean "
            f"{points(summary.total_mean)} · median {points(summary.total_median)} / "
            f"{points(summary.max_score)}"
        )
    )
    for column in ("part", "mean", "median", "full marks"):
        table.add_column(column, justify="left" if column == "part" else "right")
    for part in summary.parts:
        table.add_row(
            part.id,
            f"{points(part.mean)} / {points(part.max_score)}",
            points(part.median),
            _percent(part.full_marks_rate),
        )
    console.print(table)
    for test in summary.failed_tests[:5]:
        # Messages can quote student text: plain Text, never markup.
        console.print(
            Text.assemble((f"{test.failures}× wrong", "red"), f" {test.part} · {test.name}"),
            Text(f"    {test.message}"),
            sep="\n",
        )
    for cluster in summary.clusters[:5]:
        console.print(Text(cluster_sentence(cluster)))
    if summary.grader_errors:
        console.print(
            f"[bold red]{summary.grader_errors} submission(s) hit a grader error[/]: their rows "
            "say so; run the same command again to retry them."
        )


def write_summary(
    summary: BatchSummary,
    gradebook: Sequence[dict[str, str]],
    out_dir: Path,
    console: Console,
    *,
    students: Sequence[tuple[str, str, dict[str, Any] | None]] = (),
    similarity: Sequence[SimilarPair] = (),
    similarity_note: str = "",
) -> None:
    """summary.json, summary.html and one page per student (key, name, report) in `out_dir`.

    `students` is in the gradebook's row order, so row i links to student i's page.
    """
    write_json_atomic(out_dir / "summary.json", summary_dict(summary))
    pages = out_dir / STUDENTS_DIR
    pages.mkdir(parents=True, exist_ok=True)
    for key, name, report in students:
        write_text_atomic(out_dir / student_file(key), student_html(key, name, report))
    page = summary_html(
        summary,
        gradebook,
        links=[student_href(key) for key, _, _ in students],
        similarity=similarity,
        similarity_note=similarity_note,
    )
    write_text_atomic(out_dir / "summary.html", page)
    print_summary(summary, console)
