"""`check` and `submit` called from a cell of the running notebook (Jupyter, VS Code, Colab).

    from grader.notebook import check, submit
    check("manual_backprop")   # that part's public tests, on the code as it ran
    check()                    # every part's
    submit()                   # the zip `python -m grader submit` writes

What is checked is what ran: the kernel's own record of the cells it executed (IPython's
raw input history, each source once, at its last run; a cell that did not compile ran
nothing and is left out) becomes a notebook next to copies of the part files, and
`python -m grader check --json` tests that folder in a child process, exactly as from a
terminal. Nothing is saved first and no front end is asked anything. The child decides every
verdict (the kernel's state never does), and it runs under an outer wall-clock bound (the
per-test limit times the timeouts a part may have, for each part checked, plus start-up), so
a hanging part costs the kernel that long at most; an interrupt stops the child too.

Feedback naming "notebook cell N" is rewritten to the cell's execution count, "cell [12]",
the number the front end shows next to it.

`submit` zips the notebook file as saved (Jupyter and VS Code: save it first, it warns when
a part's cell last run differs from the saved one), or in Colab, where the notebook is not
a local file, the notebook as it is now, from Colab's front end; then offers the download.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.course.root import COURSE_ENV, PACKAGE_ROOT
from grader.notebook.cells import cell_part, read_cells

if TYPE_CHECKING:
    from grader.course.manifest import Assignment
    from grader.student.check import CheckResult

# Starting Python, pytest and torch in the child, and collecting the tests.
START_ALLOWANCE_S = 120.0
CONSOLE_WIDTH = 100
COLAB_NOTEBOOK_TIMEOUT_S = 30
_CELL_NUMBER = re.compile(r"\b(notebook )?cell (\d+)\b")


def executed_cells() -> list[tuple[int, str]]:
    """(execution count, raw source) of each cell this kernel ran, each source at its last run.

    Outside IPython (a plain script) there are none: the saved files are checked.
    """
    shell = _ipython()
    if shell is None:
        return []
    history: list[str] = list(shell.history_manager.input_hist_raw)
    last_run: dict[str, int] = {}
    for count, source in enumerate(history):
        if count and source.strip() and _compiles(shell, source):
            last_run.pop(source, None)  # re-inserted: dicts keep the order of insertion
            last_run[source] = count
    return [(count, source) for source, count in last_run.items()]


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _compiles(shell: Any, source: str) -> bool:
    """Whether IPython could run the cell at all (a syntax error runs nothing)."""
    try:
        ast.parse(shell.transform_cell(source))
    except (SyntaxError, ValueError):
        return False
    return True


def notebook_json(cells: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """A notebook of code cells in the order given, each with its execution count."""
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "id": f"run-{count}",
                "execution_count": count,
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for count, source in cells
        ],
    }


def check(part: str | None = None, *, assignment: str | None = None) -> None:
    """Run `part`'s public tests (default: every part's) on the code as it ran; show the table."""
    from grader.student.check import print_check

    chosen, student_dir = _locate(assignment)
    parts = [part] if part is not None else [p.id for p in chosen.parts]
    cells = executed_cells()
    with tempfile.TemporaryDirectory(prefix="grader-notebook-check-") as temporary:
        folder = _snapshot(student_dir, chosen, Path(temporary), cells)
        command = ["check", str(folder), "-a", chosen.id, "--json"]
        command += [item for p in ([part] if part is not None else []) for item in ("--part", p)]
        completed = _run_grader(command, chosen, _outer_limit(chosen, parts))
    if completed is None:
        _show_text(_stopped_message(chosen, parts))
        return
    try:
        data = json.loads(completed.stdout)
    except json.JSONDecodeError:
        _show_text((completed.stderr or completed.stdout).strip() or "check did not run.")
        return
    result = _renumber(_check_result(data), dict(enumerate((c for c, _ in cells), start=1)))
    others = tuple(f"{p.id}: " for p in chosen.parts if p.id not in parts)
    result = replace(result, notes=tuple(n for n in result.notes if not n.startswith(others)))
    console = _recording_console()
    again = f"check({part!r})" if part is not None else "check()"
    print_check(replace(result, directory=student_dir), console, again=again)
    _show_console(console)


def submit(*, output: Path | str | None = None, assignment: str | None = None) -> Path | None:
    """Write the submission zip (the notebook as saved, or in Colab as it is now); its path.

    None when no zip was written: the printed output says why.
    """
    chosen, student_dir = _locate(assignment)
    target = Path(output) if output is not None else student_dir / f"{chosen.id}_submission.zip"
    target = target.resolve()
    limit = _outer_limit(chosen, [p.id for p in chosen.parts])
    colab = "google.colab" in sys.modules
    with tempfile.TemporaryDirectory(prefix="grader-notebook-submit-") as temporary:
        folder = student_dir
        if colab and chosen.notebook:
            folder = _snapshot(student_dir, chosen, Path(temporary), [])
            (folder / chosen.notebook).write_text(json.dumps(_colab_notebook()), encoding="utf-8")
        else:
            for warning in unsaved_parts(student_dir, chosen, executed_cells()):
                print(warning)
        completed = _run_grader(
            ["submit", str(folder), "-a", chosen.id, "-o", str(target)], chosen, limit
        )
    if completed is None:
        print(f"submit stopped after {limit:g} s without writing a zip; run check() first.")
        return None
    print((completed.stdout + completed.stderr).replace(str(folder), str(student_dir)).rstrip())
    if completed.returncode != 0 or not target.is_file():
        return None
    print(f"Your submission: {target}")
    if colab:
        from google.colab import files

        files.download(str(target))
    return target


def unsaved_parts(
    student_dir: Path, assignment: Assignment, cells: Sequence[tuple[int, str]]
) -> list[str]:
    """A warning per part whose cell, as last run, is not in the saved notebook."""
    if not assignment.notebook or not cells:
        return []
    path = student_dir / assignment.notebook
    try:
        saved, _ = read_cells(path.read_bytes())
    except Exception:  # missing or unreadable: submit says so itself
        return []
    saved_parts: dict[str, set[str]] = {}
    for cell in saved:
        part = cell_part(cell) if cell.kind == "code" else None
        if part is not None:
            saved_parts.setdefault(part, set()).add(cell.source.strip())
    ran: dict[str, tuple[int, str]] = {}
    for count, source in cells:
        part = cell_part(_code_cell(source))
        if part is not None:
            ran[part] = (count, source.strip())
    return [
        f"warning: the cell of {part} you ran last ([{count}]) is not in the saved {path.name}: "
        "save the notebook (File > Save, or Ctrl+S / Cmd+S), then run submit() again."
        for part, (count, source) in ran.items()
        if part in {p.id for p in assignment.parts} and source not in saved_parts.get(part, set())
    ]


def _code_cell(source: str) -> Any:
    from grader.notebook.cells import Cell

    return Cell(number=0, kind="code", source=source)


def _locate(assignment_name: str | None) -> tuple[Assignment, Path]:
    """The assignment and the student's folder, from the kernel's working folder."""
    from grader.course.manifest import choose_assignment
    from grader.student.check import locate_student_folder

    here = Path.cwd()
    chosen, _ = choose_assignment(assignment_name, here)
    return chosen, locate_student_folder(here, chosen)


def _snapshot(
    student_dir: Path, assignment: Assignment, folder: Path, cells: Sequence[tuple[int, str]]
) -> Path:
    """`folder` holding copies of the part files and, when cells ran, their notebook."""
    for name in assignment.files:
        source = student_dir / name
        if source.is_file():
            (folder / name).write_bytes(source.read_bytes())
    if cells and assignment.notebook:
        (folder / assignment.notebook).write_text(
            json.dumps(notebook_json(cells)), encoding="utf-8"
        )
    elif assignment.notebook and (student_dir / assignment.notebook).is_file():
        (folder / assignment.notebook).write_bytes((student_dir / assignment.notebook).read_bytes())
    return folder


def _outer_limit(assignment: Assignment, parts: Sequence[str]) -> float:
    """What the child may take: each part's timeouts at the per-test limit, plus start-up."""
    from grader.grading.suites import TIMEOUTS_PER_PART

    per_part = max(assignment.limits.part_budget, TIMEOUTS_PER_PART * assignment.limits.timeout_s)
    return START_ALLOWANCE_S + per_part * len(parts)


def _stopped_message(assignment: Assignment, parts: Sequence[str]) -> str:
    return (
        f"check stopped after {_outer_limit(assignment, parts):g} s, the time limit of "
        f"{', '.join(parts)} ({assignment.limits.timeout_s:g} s per test) plus start-up: look "
        "for an endless loop, or far more work than the tests ask for."
    )


def _run_grader(
    arguments: list[str], assignment: Assignment, limit_s: float
) -> subprocess.CompletedProcess[str] | None:
    """`python -m grader ARGUMENTS` in its own session, killed after `limit_s`; None then."""
    course = assignment.directory.parent.parent
    # Plain text: the output is shown in a cell, not a terminal.
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(
        {
            "TERM": "dumb",
            "NO_COLOR": "1",
            COURSE_ENV: str(course),
            "PYTHONPATH": os.pathsep.join(
                [str(PACKAGE_ROOT), *filter(None, [env.get("PYTHONPATH")])]
            ),
            "COLUMNS": str(CONSOLE_WIDTH),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", *arguments],
        cwd=course,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=os.name == "posix",
    )
    try:
        stdout, stderr = process.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        # On a timeout or an interrupt (the stop button), the child and its tests go too.
        _kill_group(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    if process.poll() is not None:
        return
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:
        process.kill()
    process.communicate()


def _check_result(data: dict[str, Any]) -> CheckResult:
    """The CheckResult `check --json` wrote (its to_json), rebuilt."""
    from grader.student.check import CheckResult, PartCheck
    from grader.student.run import PublicTest

    def build(kind: type[Any], values: dict[str, Any], **extra: Any) -> Any:
        names = {field.name for field in fields(kind)}
        return kind(**{k: v for k, v in {**values, **extra}.items() if k in names})

    return CheckResult(
        assignment=data["assignment"],
        directory=Path(data["directory"]),
        parts=tuple(build(PartCheck, values, id=pid) for pid, values in data["parts"].items()),
        tests=tuple(build(PublicTest, values) for values in data["tests"]),
        notes=tuple(data["notes"]),
        error=data["error"],
        duration_s=float(data["duration_s"]),
    )


def _renumber(result: CheckResult, counts: dict[int, int]) -> CheckResult:
    """Name cells by their execution count, as the front end shows them, not their position."""

    def text(message: str) -> str:
        def swap(match: re.Match[str]) -> str:
            count = counts.get(int(match.group(2)))
            return match.group(0) if count is None else f"cell [{count}]"

        return _CELL_NUMBER.sub(swap, message)

    return replace(
        result,
        notes=tuple(text(note) for note in result.notes),
        error=text(result.error),
        parts=tuple(replace(part, problem=text(part.problem)) for part in result.parts),
        tests=tuple(
            replace(test, message=text(test.message), hint=text(test.hint)) for test in result.tests
        ),
    )


def _colab_notebook() -> dict[str, Any]:
    """The notebook open in Colab, as it is now, from Colab's front end."""
    from google.colab import _message

    reply = _message.blocking_request("get_ipynb", request="", timeout_sec=COLAB_NOTEBOOK_TIMEOUT_S)
    notebook: dict[str, Any] = reply["ipynb"]
    return notebook


def _recording_console() -> Any:
    from rich.console import Console

    return Console(
        record=True,
        file=io.StringIO(),
        width=CONSOLE_WIDTH,
        force_terminal=True,
        force_jupyter=False,
        color_system="truecolor",
        highlight=False,
    )


def _show_console(console: Any) -> None:
    """What `console` recorded: HTML where the front end renders it, plain text otherwise."""
    html = console.export_html(
        inline_styles=True, clear=False, code_format='<pre style="line-height:1.3">{code}</pre>'
    )
    _display({"text/plain": console.export_text(), "text/html": html})


def _show_text(message: str) -> None:
    _display({"text/plain": message})


def _display(bundle: dict[str, str]) -> None:
    if _ipython() is None:
        print(bundle["text/plain"])
        return
    from IPython.display import display

    display(bundle, raw=True)  # type: ignore[no-untyped-call]
