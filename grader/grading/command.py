"""`grade`: grade one submission in a grading worker and write its results files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from grader.course.manifest import Assignment
from grader.grading.devices import resolve_device
from grader.grading.grade import GradeSettings, provisional_result
from grader.grading.seeds import grading_seed
from grader.results.atomic import write_json_atomic
from grader.results.gradescope import results_dict
from grader.results.model import GradingResult
from grader.results.report import report_dict
from grader.workers.executors import grade_in_worker


def write_outputs(
    result: GradingResult, *, results_path: Path | None, report_path: Path | None
) -> None:
    if results_path:
        write_json_atomic(results_path, results_dict(result))
    if report_path:
        write_json_atomic(report_path, report_dict(result))


def grade_command(
    submission: Path,
    assignment: Assignment,
    settings: GradeSettings,
    *,
    results_path: Path | None,
    report_path: Path | None,
) -> GradingResult:
    """`grade`: a provisional results file first, so even a killed run leaves a valid one."""
    seed = grading_seed(settings.seed)
    # The output files exist from the provisional write on; student code must not see them.
    outputs = tuple(path.resolve() for path in (results_path, report_path) if path)
    settings = dataclasses.replace(settings, seed=seed, hide=(*settings.hide, *outputs))
    device = resolve_device(settings.device)
    write_outputs(
        provisional_result(assignment, seed=seed, device=device),
        results_path=results_path,
        report_path=report_path,
    )
    result = grade_in_worker(submission, assignment, settings)
    write_outputs(result, results_path=results_path, report_path=report_path)
    return result
