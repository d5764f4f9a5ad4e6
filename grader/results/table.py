"""GradingResult -> the terminal table people read after `grade`; how an outcome looks there.

`check` prints its public tests with the same colours and the same cut messages.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.intake.safetext import cap_text
from grader.results.model import GradingResult, points

OUTCOME_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "red",
    "timeout": "magenta",
    "skipped": "dim",
    # A gated test that passed but does not count yet (`TestResult.waiting`).
    "waiting": "yellow",
    # `check` only: a public test that reached a stub.
    "not implemented yet": "yellow",
}
MAX_MESSAGE_LINES = 8
# A line longer than this is shown cut: the report has it whole (within its own cap).
MAX_LINE_CHARS = 400


def outcome_label(outcome: str) -> Text:
    """The outcome in capitals, padded to one column width, in its colour."""
    return Text(f"{outcome.upper():8}", style=OUTCOME_STYLE.get(outcome, "red"))


def message_lines(message: str, *, rest: str) -> list[Text]:
    """A message's first lines, indented, each cut to one screen line's worth.

    `rest` says where the lines not shown can be read ("in the report").
    """
    lines = message.splitlines()
    shown = [
        Text("    " + cap_text(line, MAX_LINE_CHARS).replace("\n", " "))
        for line in lines[:MAX_MESSAGE_LINES]
    ]
    if len(lines) > MAX_MESSAGE_LINES:
        hidden = len(lines) - MAX_MESSAGE_LINES
        shown.append(Text(f"    ... ({hidden} more lines{rest})"))
    return shown


def print_result(result: GradingResult, console: Console, *, show_passed: bool = False) -> None:
    table = Table(title=f"{result.assignment}: {points(result.score)} / {points(result.max_score)}")
    table.add_column("part")
    table.add_column("tests passed", justify="right")
    table.add_column("score", justify="right")
    table.add_column("source")
    for part in result.parts:
        tests = [t for t in result.tests if t.part == part.id and t.outcome != "skipped"]
        # A pass that waits for its gate earns nothing yet: it is counted apart.
        waiting = sum(t.waiting for t in tests)
        passed = sum(t.outcome == "passed" for t in tests) - waiting
        style = (
            "green" if part.score >= part.max_score else ("red" if part.score == 0 else "yellow")
        )
        table.add_row(
            part.id,
            f"{passed}/{len(tests)}" + (f" (+{waiting} not counted yet)" if waiting else ""),
            Text(f"{points(part.score)} / {points(part.max_score)}", style=style),
            part.source,
        )
    console.print(table)
    for note in result.submission.notes:
        # Notes quote file names from the submission: never read them as markup.
        console.print(Text.assemble(("note:", "yellow"), f" {note}"))
    for test in result.tests:
        if test.outcome == "passed" and not test.waiting and not show_passed:
            continue
        label = outcome_label(test.outcome)
        if test.waiting:
            label.stylize(OUTCOME_STYLE["waiting"])
        console.print(
            Text.assemble(
                label,
                f" {test.part} · {test.name}  ({points(test.score)}/{points(test.max_score)})",
            )
        )
        if test.waiting:
            console.print(Text(f"    {test.outcome_text()}", style=OUTCOME_STYLE["waiting"]))
        for line in message_lines(test.message, rest=" in the report"):
            console.print(line)
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
