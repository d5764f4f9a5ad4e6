"""The staff summary of a batch: per-part statistics, why tests failed, the wrong answers
submissions share, a score histogram (inline SVG), one offline HTML page and a page of full
feedback per student."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.batch.pages import (
    STUDENTS_DIR,
    Cell,
    Link,
    html_table,
    notebook_file,
    page_html,
    student_file,
    student_href,
    submission_label,
    submission_name,
)
from grader.batch.similarity import SimilarPair, similarity_html
from grader.batch.stats import FAILED_OUTCOMES, BatchSummary, MistakeCluster, summary_dict
from grader.grading.causes import CAUSES
from grader.results.atomic import write_json_atomic, write_text_atomic
from grader.results.model import LeaderboardEntry, TestResult, points
from grader.results.report import Report

HISTOGRAM_BINS = 10
# Leaderboard columns shown (the first names met, in the tests' order).
LEADERBOARD_COLUMNS = 8
TEXT_COLUMNS = ("student", "email", "submission", "status")
CLUSTER_MEMBERS_SHOWN = 30

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


def _number_cell(column: str, value: str) -> str:
    if column in TEXT_COLUMNS or not value:
        return value
    try:
        return points(float(value))
    except ValueError:
        return value


def write_notebook_pages(
    submissions: Sequence[tuple[str, Path]], notebook_name: str, out_dir: Path
) -> dict[str, str]:
    """The page of each submission's notebook (key, path), beside its student page; a note
    per key for what was cut or why its notebook could not be shown. Pages of submissions
    without a notebook are removed, so a regraded student's old notebook never stays."""
    from grader.notebook.page import write_notebook_pages as render

    (out_dir / STUDENTS_DIR).mkdir(parents=True, exist_ok=True)
    pages = {key: out_dir / notebook_file(key) for key, _ in submissions}
    for page in pages.values():
        page.unlink(missing_ok=True)
    notes = render([(path, pages[key]) for key, path in submissions], notebook_name)
    return {key: note for key, page in pages.items() if (note := notes[page])}


def summary_html(
    summary: BatchSummary,
    gradebook: Sequence[dict[str, str]],
    *,
    links: Sequence[str] = (),
    similarity: Sequence[SimilarPair] | None = None,
    similarity_note: str = "",
    gradebook_warnings: Sequence[str] = (),
    leaderboard: str = "",
    names: Mapping[str, str] | None = None,
) -> str:
    """One offline page: inline CSS and SVG, no scripts. `links[i]` is row i's student page;
    `leaderboard` is `leaderboard_html`'s table (its section is left out when empty); `names`
    gives the student's name for a submission's key."""
    names = names or {}
    meta = (
        f"{summary.submissions} submissions · {summary.counted} graded · "
        f"{summary.grader_errors} grader errors · {summary.not_graded} not graded"
    )
    scores = (
        f"Mean {points(summary.total_mean)}, median {points(summary.total_median)} of "
        f"{points(summary.max_score)}; full marks: {_percent(summary.full_marks_rate)}."
    )
    parts = html_table(
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
    causes = html_table(
        ["part", *CAUSES],
        ([c.part, *(str(c.submissions.get(cause, 0)) for cause in CAUSES)] for c in summary.causes),
        classes={0: "id", **dict.fromkeys(range(1, len(CAUSES) + 1), "num")},
    )
    failed = (
        html_table(
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
    clusters = "".join(_cluster_html(c, names) for c in summary.clusters) or (
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
    book = html_table(
        columns,
        rows,
        classes={i: "num" for i, c in enumerate(columns) if c not in TEXT_COLUMNS},
    )
    body = (
        f"<p class=meta>{html.escape(meta)}</p>"
        f"<h2>Scores</h2><p>{html.escape(scores)}</p>{histogram_svg(summary)}"
        f"<h2>Parts</h2>{parts}"
        "<h2>Why tests failed</h2><p class=meta>Submissions with at least one test of the "
        f"part failing for each cause.</p>{causes}"
        f"<h2>Wrong answers most often</h2>{failed}"
        f"<h2>Same wrong answers</h2>{clusters}"
        f"<h2>Gradebook</h2>{_warnings_html(gradebook_warnings)}{book}"
        + (f"<h2>Leaderboard</h2>{leaderboard}" if leaderboard else "")
        + f"<h2>Code similarity</h2>{similarity_html(similarity, similarity_note, names)}"
    )
    return page_html(f"{summary.assignment}: batch summary", body)


def leaderboard_html(students: Sequence[tuple[str, str, Report | None]]) -> str:
    """The students ranked by the first leaderboard column ("" when no test added one).

    Each (key, name, report) is one student; names, column names and values come from
    submissions and tests, and `html_table` escapes every cell.
    """
    boards = [
        (key, name, {entry.name: entry for entry in report.result.leaderboard})
        for key, name, report in students
        if report is not None and report.result.leaderboard
    ]
    if not boards:
        return ""
    columns: list[str] = []
    for _, _, entries in boards:
        columns.extend(name for name in entries if name not in columns)
    columns = columns[:LEADERBOARD_COLUMNS]
    first = columns[0]
    descending = next(e[first].order for _, _, e in boards if first in e) == "desc"

    def rank_key(board: tuple[str, str, dict[str, LeaderboardEntry]]) -> tuple[bool, float]:
        entry = board[2].get(first)
        if entry is None:
            return (True, 0.0)
        return (False, -entry.value if descending else entry.value)

    rows: list[list[Cell]] = []
    rank, previous = 0, None
    for place, board in enumerate(sorted(boards, key=rank_key), start=1):
        key, name, entries = board
        # Equal figures share a rank (1, 1, 3); a student without the figure has none.
        if rank_key(board) != previous:
            rank, previous = place, rank_key(board)
        values = [f"{entries[c].value:.6g}" if c in entries else "" for c in columns]
        shown = str(rank) if first in entries else ""
        rows.append([shown, Link(name or key, student_href(key)), *values])
    direction = "highest" if descending else "lowest"
    return f"<p class=meta>Ranked by {html.escape(first)}, {direction} first.</p>" + html_table(
        ["rank", "student", *columns],
        rows,
        classes={0: "num", **{index: "num" for index in range(2, len(columns) + 2)}},
    )


def _warnings_html(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{html.escape(warning)}</li>" for warning in warnings)
    return f"<p class=fail>Check before importing:</p><ul>{items}</ul>"


def cluster_sentence(cluster: MistakeCluster) -> str:
    also = f" (and in {len(cluster.also)} more of its tests)" if cluster.also else ""
    return (
        f"{len(cluster.submissions)} submissions returned the same wrong "
        f"{cluster.part} · {cluster.name}{also}; most common message: {cluster.message}"
    )


def _cluster_html(cluster: MistakeCluster, names: Mapping[str, str]) -> str:
    shown = cluster.submissions[:CLUSTER_MEMBERS_SHOWN]
    members = ", ".join(
        f'<a href="{html.escape(student_href(key))}">{submission_label(key, names)}</a>'
        for key in shown
    )
    more = len(cluster.submissions) - len(shown)
    if more:
        members += f" and {more} more"
    return f"<p>{html.escape(cluster_sentence(cluster))}<br>Submissions: {members}</p>"


def _percent(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def student_html(key: str, student: str, report: Report | None, *, notebook: bool = False) -> str:
    """A staff page with one submission's full feedback: every test, its message and output,
    and a link to the submitted notebook's page where `notebook` (`notebook_file`)."""
    title = submission_name(key, student)
    if report is None:
        return page_html(
            title, "<p>Not graded yet.</p><p><a href='../summary.html'>summary</a></p>"
        )
    result = report.result
    parts_table = html_table(
        ["part", "score", "max", "source", "problem"],
        (
            [part.id, points(part.score), points(part.max_score), part.source, part.problem]
            for part in result.parts
        ),
        classes={1: "num", 2: "num", 4: "msg"},
    )
    tests = "".join(_test_html(test) for test in result.tests)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in result.submission.notes)
    error = result.grader_error
    link = quote(PurePosixPath(notebook_file(key)).name)
    body = (
        "<p><a href='../summary.html'>back to the summary</a>"
        + (f" · <a href='{link}'>the submitted notebook</a>" if notebook else "")
        + "</p>"
        f"<p>Score {points(result.score)} of {points(result.max_score)} · seed {result.seed}</p>"
        + (f"<p class=fail>Grader error:</p><pre>{html.escape(error)}</pre>" if error else "")
        # How the submission was read: which file was graded, what was left out and why.
        + (f"<h2>Notes on the submission</h2><ul>{notes}</ul>" if notes else "")
        + f"<h2>Parts</h2>{parts_table}<h2>Tests</h2>{tests}"
    )
    return page_html(title, body)


def _test_html(test: TestResult) -> str:
    outcome = test.outcome
    style = "pass" if outcome == "passed" else "fail" if outcome in FAILED_OUTCOMES else ""
    if test.waiting:
        style = "wait"
    cause = f" · {test.cause}" if test.cause else ""
    block = (
        f"<h3 class={style}>{html.escape(test.part)} · {html.escape(test.name)}: "
        f"{html.escape(test.outcome_text() + cause)} "
        f"({points(test.score)} / {points(test.max_score)})</h3>"
    )
    for text, label in (
        (test.message, ""),
        (test.output, "printed"),
        (test.detail, "staff detail"),
    ):
        if text:
            heading = f"<p class=meta>{label}</p>" if label else ""
            block += f"{heading}<pre>{html.escape(text)}</pre>"
    return block


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
    students: Sequence[tuple[str, str, Report | None]] = (),
    similarity: Sequence[SimilarPair] | None = None,
    similarity_note: str = "",
    gradebook_warnings: Sequence[str] = (),
) -> None:
    """summary.json, summary.html and one page per student (key, name, report) in `out_dir`.

    `students` is in the gradebook's row order, so row i links to student i's page, which
    links the student's notebook page where one was written (`write_notebook_pages`).
    `gradebook_warnings` are what staff should check before importing the gradebook.
    """
    write_json_atomic(
        out_dir / "summary.json",
        {**summary_dict(summary), "gradebook_warnings": list(gradebook_warnings)},
    )
    pages = out_dir / STUDENTS_DIR
    pages.mkdir(parents=True, exist_ok=True)
    for key, name, report in students:
        notebook = (out_dir / notebook_file(key)).is_file()
        page = student_html(key, name, report, notebook=notebook)
        write_text_atomic(out_dir / student_file(key), page)
    page = summary_html(
        summary,
        gradebook,
        links=[student_href(key) for key, _, _ in students],
        similarity=similarity,
        similarity_note=similarity_note,
        gradebook_warnings=gradebook_warnings,
        leaderboard=leaderboard_html(students),
        names={key: name for key, name, _ in students},
    )
    write_text_atomic(out_dir / "summary.html", page)
    print_summary(summary, console)
