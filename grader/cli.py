"""The command line: parse arguments, call one typed function per command, map errors to exits.

Library code raises GraderError subclasses; this is the one place they become a one-line
message on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import TextIO

from rich.console import Console

from grader.course.manifest import choose_assignment
from grader.course.root import COURSE_ENV, AssignmentChoiceNeeded
from grader.errors import ConfigError, GraderError, SubmissionError, UsageError
from grader.grading.devices import DEVICES, resolve_device


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed takes a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"--seed must be between 0 and 2**63-1, got {value}")
    return value


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers takes a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--workers must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m grader", description="Autograder for PyTorch assignments.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the grader does")
    course = _Parser(add_help=False)
    course.add_argument(
        "--course",
        type=Path,
        help=f"the folder holding assignments/ (default: {COURSE_ENV}, else the nearest "
        "one at or above the working folder)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands = _WithCourse(subparsers, course)

    grade = commands.add_parser("grade", help="grade one submission with the hidden tests")
    grade.add_argument("submission", type=Path, help="a folder, a .zip, or a notebook")
    grade.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    grade.add_argument("--device", default="auto", choices=DEVICES)
    grade.add_argument("--seed", type=_seed, help="reproduce an earlier grading run")
    grade.add_argument("--results", type=Path, help="write Gradescope results.json here")
    grade.add_argument("--report", type=Path, help="write report.json here")
    grade.add_argument("--show-passed", action="store_true", help="list passing tests too")

    gradescope = commands.add_parser(
        "gradescope", help="Gradescope's entry point: grade ROOT/submission into ROOT/results"
    )
    gradescope.add_argument(
        "--root", type=Path, default=Path("/autograder"), help="Gradescope's folder"
    )
    gradescope.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    gradescope.add_argument("--device", default="auto", choices=DEVICES)
    gradescope.add_argument("--seed", type=_seed, help="reproduce an earlier grading run")

    build = commands.add_parser(
        "build", help="build the Gradescope autograder, the starter kit or the walkthrough"
    )
    build.add_argument(
        "target",
        choices=("autograder", "starter", "notebook", "public"),
        help="autograder zip, students' kit, the walkthrough notebook from its template, or "
        "the stubs and public fixtures from the references",
    )
    build.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    build.add_argument("-o", "--output", type=Path, help="the zip to write")

    check = commands.add_parser("check", help="run the public tests on your files")
    check.add_argument(
        "directory", nargs="?", type=Path, default=Path("."), help="your folder (default: .)"
    )
    check.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    check.add_argument(
        "--part", action="append", help="only this part's public tests (repeat for several)"
    )

    submit = commands.add_parser("submit", help="check your files and zip them for Gradescope")
    submit.add_argument(
        "directory", nargs="?", type=Path, default=Path("."), help="your folder (default: .)"
    )
    submit.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    submit.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the zip to write (default: DIR/<assignment>_submission.zip)",
    )
    batch = commands.add_parser("batch", help="grade every submission under DIR in parallel")
    batch.add_argument(
        "directory",
        type=Path,
        help="one folder, .zip or notebook per student, or a Gradescope export",
    )
    batch.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    batch.add_argument("--workers", type=_workers, help="parallel graders (default: one per core)")
    batch.add_argument("--out", type=Path, help="reports and summary (default: DIR/../grading-out)")
    batch.add_argument("--csv", type=Path, help="the gradebook (default: OUT/gradebook.csv)")
    batch.add_argument("--force", action="store_true", help="regrade already graded submissions")
    batch.add_argument("--executor", default="local", choices=("local", "ray"))
    batch.add_argument("--address", help="Ray cluster address (default: start a local instance)")
    batch.add_argument("--device", default="auto", choices=DEVICES)
    batch.add_argument("--seed", type=_seed, help="the seed for every submission")
    batch.add_argument(
        "--no-similarity",
        dest="similarity",
        action="store_false",
        help="skip the code similarity report (copydetect) in summary.html",
    )

    validate = commands.add_parser(
        "validate", help="check an assignment (reference, stubs, tests, fixtures, kit, notebook)"
    )
    validate.add_argument("-a", "--assignment", help="assignment id (default: every one)")
    validate.add_argument("--device", default="cpu", choices=DEVICES)
    validate.add_argument(
        "--report",
        type=Path,
        help="also write the problems and the metric tests' figures here (JSON)",
    )

    new = commands.add_parser("new", help="scaffold a new assignment that passes validate")
    new.add_argument("name", help="the assignment id: lower case letters, digits and _")
    new.add_argument("--title", help="a one-line title (default: the name)")
    return parser


class _WithCourse:
    """Adds every subcommand with the shared --course option."""

    def __init__(self, subparsers: argparse._SubParsersAction[_Parser], course: _Parser) -> None:
        self.subparsers = subparsers
        self.course = course

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self.subparsers.add_parser(
            name, help=help, parents=[self.course]
        )
        return parser


def _note(note: str, *, stream: TextIO = sys.stdout) -> None:
    """Say which assignment was inferred; on stdout, where the command's own report goes."""
    if note:
        print(f"note: assignment {note} (-a chooses another).", file=stream)


def _run_grade(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.grading.command import grade_command
    from grader.grading.grade import GradeSettings
    from grader.results.table import print_result
    from grader.sandbox.settings import protections_notice

    assignment, note = choose_assignment(args.assignment, args.submission)
    _note(note)
    result = grade_command(
        args.submission,
        assignment,
        GradeSettings(device=args.device, seed=args.seed),
        results_path=args.results,
        report_path=args.report,
    )
    print_result(result, console, show_passed=args.show_passed)
    if args.report and assignment.notebook:
        _write_notebook_page(args.submission, assignment.notebook, args.report, console)
    notice = protections_notice(result.environment.get("sandbox", {}))
    if notice:
        print(notice, file=sys.stderr)
    return ExitCode.FAILED if result.grader_error else ExitCode.OK


def _write_notebook_page(submission: Path, notebook: str, report: Path, console: Console) -> None:
    """The submitted notebook, rendered inert, next to the report: REPORT.notebook.html."""
    from grader.notebook.page import write_notebook_page

    page = report.with_name(f"{report.stem}.notebook.html")
    note = write_notebook_page(submission, notebook, page)
    if note is not None:
        console.print(
            f"wrote {page}" + (f" ({note})" if note else ""), markup=False, soft_wrap=True
        )


def _run_gradescope(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.grading.grade import GradeSettings
    from grader.grading.gradescope_run import run_gradescope
    from grader.results.table import print_result

    run = run_gradescope(
        args.root,
        assignment_name=args.assignment,
        settings=GradeSettings(device=args.device, seed=args.seed),
    )
    # Gradescope shows this output to staff only (stdout_visibility is hidden).
    if run.result is not None:
        print_result(run.result, console)
        if run.result.grader_error:
            console.print(run.result.grader_error, markup=False)
    else:
        console.print(f"grading could not start:\n{run.failure}", markup=False)
    console.print(f"wrote {run.results_path}", markup=False)
    return ExitCode.OK


def _run_build_public(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.authoring.public import build_public

    if args.output is not None:
        raise UsageError("build public writes into the assignment's folder; it takes no -o.")
    changes = build_public(args.assignment)
    for path in changes.wrote:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)
    for path in changes.deleted:
        console.print(f"deleted {path}", markup=False, soft_wrap=True)
    if not changes.wrote and not changes.deleted:
        console.print("the stubs and public fixtures were up to date", markup=False)
    return ExitCode.OK


def _run_build(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.authoring.build import build_autograder, build_notebook, build_starter

    if args.target == "notebook":
        if args.output is not None:
            raise UsageError("build notebook writes the manifest's notebook; it takes no -o.")
        console.print(f"wrote {build_notebook(args.assignment)}", markup=False)
        return ExitCode.OK
    if args.target == "public":
        return _run_build_public(args, console)
    build = build_autograder if args.target == "autograder" else build_starter
    built = build(args.assignment, output=args.output)
    console.print(
        f"wrote {built.path} ({len(built.files)} files, {built.size_bytes / 1024:.0f} KiB)",
        markup=False,
    )
    for path in built.wrote:
        console.print(f"wrote {path}: commit it with the assignment", markup=False)
    return ExitCode.OK


def _run_check(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.student.check import check_command, print_check, print_check_json

    assignment, note = choose_assignment(args.assignment, args.directory)
    _note(note, stream=sys.stderr if args.json else sys.stdout)  # --json: stdout is JSON only
    result = check_command(args.directory, assignment.id, parts=args.part)
    if args.json:
        print_check_json(result)
    else:
        print_check(result, console)
    return ExitCode.OK if result.passed else ExitCode.FAILED


def _run_submit(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.student.submit import submit_command

    submit_command(args.directory, args.assignment, output=args.output, console=console)
    return ExitCode.OK


def _run_batch(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.batch.discovery import check_submissions_folder
    from grader.batch.run import BatchOptions, default_out_dir, run_batch

    check_submissions_folder(args.directory)
    assignment, note = choose_assignment(args.assignment, args.directory)
    _note(note)
    out_dir = args.out or default_out_dir(args.directory)
    options = BatchOptions(
        root=args.directory,
        out_dir=out_dir,
        csv_path=args.csv or out_dir / "gradebook.csv",
        workers=args.workers or os.cpu_count() or 1,
        force=args.force,
        executor=args.executor,
        address=args.address,
        device=args.device,
        seed=args.seed,
        similarity=args.similarity,
    )
    try:
        outcome = run_batch(options, assignment, console)
    except KeyboardInterrupt:
        print("interrupted: run the same command again to grade the rest", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.FAILED if outcome.failed else ExitCode.OK


def _run_validate(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.authoring.validate import validation_of, validation_report
    from grader.course.manifest import available_assignments
    from grader.results.atomic import write_json_atomic

    names = [args.assignment] if args.assignment else available_assignments()
    device = resolve_device(args.device)
    validations = []
    for name in names:
        validation = validation_of(name, device=device, say=print)
        validations.append(validation)
        found = validation.problems
        verdict = "ok" if not found else f"{len(found)} problem{'s' * (len(found) > 1)}"
        console.print(f"{name}: {verdict}", markup=False)
    if args.report is not None:
        write_json_atomic(args.report, validation_report(validations, device=device))
    return ExitCode.FAILED if any(v.problems for v in validations) else ExitCode.OK


def _run_new(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.authoring.scaffold import scaffold_assignment
    from grader.course.root import find_course_root

    try:
        # Never the course this grader came with: a new course's first assignment goes here.
        root = args.course.resolve() if args.course else find_course_root(package_course=False)
    except ConfigError:
        root = Path.cwd().resolve()  # the first assignment of a new course
    created = scaffold_assignment(root, args.name, title=args.title)
    console.print(f"in {root}:", markup=False)
    for path in created:
        console.print(f"created {path.relative_to(root)}", markup=False)
    console.print(
        f"next: python -m grader validate -a {args.name}  (docs/authoring.md explains each file)",
        markup=False,
    )
    return ExitCode.OK


def choice_commands(argv: Sequence[str], error: AssignmentChoiceNeeded) -> str:
    """The command the user typed, once per assignment, with -a added."""
    typed = shlex.join(argv)
    return "\n".join(
        f"  python -m grader {typed} -a {shlex.quote(choice)}" for choice in error.choices
    )


RUNNERS = {
    "grade": _run_grade,
    "batch": _run_batch,
    "check": _run_check,
    "submit": _run_submit,
    "gradescope": _run_gradescope,
    "build": _run_build,
    "validate": _run_validate,
    "new": _run_new,
}


def main(argv: Sequence[str] | None = None) -> int:
    console = Console(highlight=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    saved_course = os.environ.get(COURSE_ENV)
    try:
        args = build_parser().parse_args(argv)
        if args.course is not None and args.command != "new":
            # Where `find_course_root` looks first.
            os.environ[COURSE_ENV] = str(args.course.resolve())
        logging.basicConfig(
            level=logging.DEBUG if args.verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )
        return int(RUNNERS[args.command](args, console))
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except AssignmentChoiceNeeded as error:
        print(
            f"error: {len(error.choices)} assignments in {error.root}; say which with -a:\n"
            + choice_commands(argv, error),
            file=sys.stderr,
        )
        return ExitCode.USAGE
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except SubmissionError as error:
        print(f"submission error: {error}", file=sys.stderr)
        return ExitCode.FAILED
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.FAILED
    finally:
        # main() may be called in-process (tests, scripts): leave the environment as found.
        if saved_course is None:
            os.environ.pop(COURSE_ENV, None)
        else:
            os.environ[COURSE_ENV] = saved_course
