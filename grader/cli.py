"""The command line: parse arguments, call one typed function per command, map errors to exits.

Library code raises GraderError subclasses; this is the one place they become a one-line
message on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from rich.console import Console

from grader.assignment import load_assignment
from grader.errors import ConfigError, GraderError, SubmissionError, UsageError


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
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    grade = commands.add_parser("grade", help="grade one submission with the hidden tests")
    grade.add_argument("submission", type=Path, help="a folder, a .zip, or a notebook")
    grade.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    grade.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
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
    gradescope.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    gradescope.add_argument("--seed", type=_seed, help="reproduce an earlier grading run")

    build = commands.add_parser("build", help="build the Gradescope autograder or starter kit")
    build.add_argument(
        "target", choices=("autograder", "starter"), help="autograder zip or students' kit"
    )
    build.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    build.add_argument("-o", "--output", type=Path, help="the zip to write")

    check = commands.add_parser("check", help="run the public tests on your files")
    check.add_argument(
        "directory", nargs="?", type=Path, default=Path("."), help="your folder (default: .)"
    )
    check.add_argument("-a", "--assignment", help="assignment id (optional if only one)")
    check.add_argument("--json", action="store_true", help="print the results as JSON")

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
    batch.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    batch.add_argument("--seed", type=_seed, help="the seed for every submission")
    return parser


def _run_grade(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.grade import GradeSettings, grade_command
    from grader.sandbox import protections_notice
    from grader.table import print_result

    assignment = load_assignment(args.assignment)
    result = grade_command(
        args.submission,
        assignment,
        GradeSettings(device=args.device, seed=args.seed),
        results_path=args.results,
        report_path=args.report,
    )
    print_result(result, console, show_passed=args.show_passed)
    notice = protections_notice(result.environment.get("sandbox", {}))
    if notice:
        print(notice, file=sys.stderr)
    return ExitCode.FAILED if result.grader_error else ExitCode.OK


def _run_gradescope(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.grade import GradeSettings
    from grader.gradescope_run import run_gradescope
    from grader.table import print_result

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


def _run_build(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.build import build_autograder, build_starter

    build = build_autograder if args.target == "autograder" else build_starter
    built = build(args.assignment, output=args.output)
    console.print(
        f"wrote {built.path} ({len(built.files)} files, {built.size_bytes / 1024:.0f} KiB)",
        markup=False,
    )
    return ExitCode.OK


def _run_check(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.check import check_command, print_check, print_check_json

    result = check_command(args.directory, args.assignment)
    if args.json:
        print_check_json(result)
    else:
        print_check(result, console)
    return ExitCode.OK if result.passed else ExitCode.FAILED


def _run_submit(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.submit import submit_command

    submit_command(args.directory, args.assignment, output=args.output, console=console)
    return ExitCode.OK


def _run_batch(args: argparse.Namespace, console: Console) -> ExitCode:
    from grader.batch import BatchOptions, default_out_dir, run_batch

    assignment = load_assignment(args.assignment)
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
    )
    try:
        outcome = run_batch(options, assignment, console)
    except KeyboardInterrupt:
        print("interrupted: run the same command again to grade the rest", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.FAILED if outcome.failed else ExitCode.OK


RUNNERS = {
    "grade": _run_grade,
    "batch": _run_batch,
    "check": _run_check,
    "submit": _run_submit,
    "gradescope": _run_gradescope,
    "build": _run_build,
}


def main(argv: Sequence[str] | None = None) -> int:
    console = Console(highlight=False)
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(
            level=logging.DEBUG if args.verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )
        return int(RUNNERS[args.command](args, console))
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
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
