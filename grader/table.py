"""GradingResult -> the terminal table people read after `grade`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.results import GradingResult
from grader.safetext import cap_text

OUTCOME_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "red",
    "timeout": "magenta",
    "skipped": "dim",
}
MAX_MESSAGE_LINES = 8
# A line longer than this is shown cut: the report has it whole (within its own cap).
MAX_LINE_CHARS = 400


def print_result(result: GradingResult, console: Console, *, show_passed: bool = False) -> None:
    table = Table(title=f"{result.assignment}: {result.score:g} / {result.max_score:g}")
    table.add_column("part")
    table.add_column("tests passed", justify="right")
    table.add_column("score", justify="right")
    table.add_column("source")
    for part in result.parts:
        tests = [t for t in result.tests if t.part == part.id and t.outcome != "skipped"]
        passed = sum(t.outcome == "passed" for t in tests)
        style = (
            "green" if part.score >= part.max_score else ("red" if part.score == 0 else "yellow")
        )
        table.add_row(
            part.id,
            f"{passed}/{len(tests)}",
            Text(f"{part.score:g} / {part.max_score:g}", style=style),
            part.source,
        )
    console.print(table)
    for note in result.submission.notes:
        # Notes quote file names from the submission: never read them as markup.
        console.print(Text.assemble(("note:", "yellow"), f" {note}"))
    for test in result.tests:
        if test.outcome == "passed" and not show_passed:
            continue
        style = OUTCOME_STYLE[test.outcome]
        console.print(
            Text.assemble(
                (f"{test.outcome.upper():8}", style),
                f" {test.part} · {test.name}  ({test.score:g}/{test.max_score:g})",
            )
        )
        lines = test.message.splitlines()
        for line in lines[:MAX_MESSAGE_LINES]:
            console.print(Text("    " + cap_text(line, MAX_LINE_CHARS).replace("\n", " ")))
        if len(lines) > MAX_MESSAGE_LINES:
            console.print(
                Text(f"    ... ({len(lines) - MAX_MESSAGE_LINES} more lines in the report)")
            )
    if result.grader_error:
        console.print(
            Text(
                "grader error: " + cap_text(result.grader_error.splitlines()[0], MAX_LINE_CHARS),
                style="bold red",
            )
        )
    console.print(
        f"seed {result.seed} · device {result.device} · {result.duration_s:.1f} s",
        style="dim",
    )
