"""`gradescope`: grade what Gradescope put in ROOT/submission, write ROOT/results/results.json.

Gradescope's layout (its autograder specification): the autograder zip unpacked in
ROOT/source, the student's upload in ROOT/submission, the harness's metadata in
ROOT/submission_metadata.json, and ROOT/results/results.json read back when `run_autograder`
exits. Whatever happens, a valid results.json is left behind: a provisional one before any
student code runs, then the real one; even a course set-up that cannot load gets a visible
explanation instead of Gradescope's "the autograder failed to execute correctly".
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.manifest import Assignment, load_assignment
from grader.course.policy.apply import PolicyOutcome, apply_policy
from grader.course.policy.metadata import SubmissionFacts, gradescope_facts
from grader.course.policy.results_json import add_policy
from grader.grading.devices import resolve_device
from grader.grading.grade import GradeSettings, crashed_result, provisional_result
from grader.grading.seeds import grading_seed
from grader.intake.upload import pick_upload
from grader.results.atomic import write_json_atomic
from grader.results.gradescope import failure_results_dict, results_dict
from grader.results.model import GradingResult
from grader.workers.executors import grade_in_worker

log = logging.getLogger(__name__)

# submission_metadata.json holds every previous result of the student; it is never huge, but
# it is read before grading, so a cap keeps a broken file from costing the run.
MAX_METADATA_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class GradescopeLayout:
    """Where Gradescope puts things under its root folder (/autograder)."""

    root: Path

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    @property
    def results_json(self) -> Path:
        return self.results_dir / "results.json"

    @property
    def metadata(self) -> Path:
        return self.root / "submission_metadata.json"


@dataclass(frozen=True)
class GradescopeRun:
    """What `run_gradescope` did: the result written (None if grading could not start) and
    why not, and what the course's policies made of it."""

    results_path: Path
    result: GradingResult | None
    failure: str = ""
    policy: PolicyOutcome | None = None


def load_metadata(path: Path) -> object:
    """Gradescope's metadata as decoded JSON; None when absent, too large or not JSON."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_METADATA_BYTES + 1)
        return json.loads(raw) if len(raw) <= MAX_METADATA_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None


def metadata_ids(data: object) -> dict[str, Any]:
    """Submission id, time and user ids from decoded metadata; {} when absent or odd.

    Only ids are kept: names, e-mails and earlier results stay out of results.json.
    """
    if not isinstance(data, dict):
        return {}
    kept: dict[str, Any] = {}
    if isinstance(data.get("id"), int | str):
        kept["submission_id"] = data["id"]
    if isinstance(data.get("created_at"), str):
        kept["created_at"] = data["created_at"]
    assignment = data.get("assignment")
    if isinstance(assignment, dict) and isinstance(assignment.get("id"), int | str):
        kept["assignment_id"] = assignment["id"]
    users = data.get("users")
    if isinstance(users, list):
        kept["user_ids"] = [
            user["id"]
            for user in users
            if isinstance(user, dict) and isinstance(user.get("id"), int | str)
        ]
    return kept


def read_metadata(path: Path) -> dict[str, Any]:
    """The ids in the metadata file at `path` (see `metadata_ids`)."""
    return metadata_ids(load_metadata(path))


def submission_facts(data: object) -> SubmissionFacts:
    """What decoded metadata says about time, for the course's policies."""
    if data is None:
        return SubmissionFacts(
            due_dates=None, notes=("submission_metadata.json is missing, too large or not JSON",)
        )
    return gradescope_facts(data)


def with_policy(
    result: GradingResult, assignment: Assignment, facts: SubmissionFacts
) -> PolicyOutcome:
    """`result` under the assignment's policies; a failure of the policy code itself leaves
    the result as graded, with a note for staff, never a grader error for the student."""
    try:
        outcome = apply_policy(result, assignment.policy, facts)
    except Exception as error:
        log.exception("the course's policies could not be applied")
        return PolicyOutcome(
            result=result,
            earned=result.score,
            after_penalty=result.score,
            staff_notes=(f"the policies could not be applied ({type(error).__name__}: {error})",),
        )
    for note in outcome.staff_notes:
        log.warning("policy: %s", note)
    return outcome


def _restrict_metadata(path: Path) -> None:
    """Make the metadata root-only, in case the sandbox cannot mask it (no mount namespace)."""
    if os.geteuid() == 0 and path.is_file() and not path.is_symlink():
        try:
            path.chmod(0o600)
        except OSError as error:  # a read-only mount: the sandbox's mask is all there is
            log.warning("cannot restrict %s: %s", path, error)


def _with_notes(result: GradingResult, notes: tuple[str, ...]) -> GradingResult:
    if not notes:
        return result
    submission = dataclasses.replace(result.submission, notes=(*notes, *result.submission.notes))
    return dataclasses.replace(result, submission=submission)


def _write(
    layout: GradescopeLayout,
    result: GradingResult,
    metadata: dict[str, Any],
    policy: PolicyOutcome | None = None,
) -> None:
    data = results_dict(result)
    if policy is not None:
        add_policy(data, policy)
    if metadata:
        data["extra_data"]["gradescope"] = metadata
    write_json_atomic(layout.results_json, data)


def run_gradescope(
    root: Path, *, assignment_name: str | None, settings: GradeSettings
) -> GradescopeRun:
    """Grade ROOT/submission and write ROOT/results/results.json, whatever goes wrong."""
    layout = GradescopeLayout(root.resolve())
    try:
        assignment = load_assignment(assignment_name)
        seed = grading_seed(settings.seed)
        device = resolve_device(settings.device)
    except Exception as error:  # no assignment, no scores: say so, visibly
        log.exception("the gradescope run could not start")
        failure = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        write_json_atomic(layout.results_json, failure_results_dict(failure))
        return GradescopeRun(layout.results_json, None, failure)
    # Read before any student code runs, then only root can read it; the decoded file (up to
    # 32 MiB of earlier results) is not kept while grading, only what the policies need.
    raw_metadata = load_metadata(layout.metadata)
    metadata = metadata_ids(raw_metadata)
    facts = submission_facts(raw_metadata)
    del raw_metadata
    _restrict_metadata(layout.metadata)
    settings = dataclasses.replace(
        settings,
        seed=seed,
        hide=(*settings.hide, layout.results_dir, layout.metadata),
    )
    _write(layout, provisional_result(assignment, seed=seed, device=device), {})
    try:
        upload, notes = pick_upload(layout.submission, assignment)
        result = _with_notes(grade_in_worker(upload, assignment, settings), notes)
    except Exception as error:  # grade_in_worker should not raise; if it does, say so
        log.exception("grading failed")
        message = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        result = crashed_result(assignment, message, seed=seed, device=device)
    if not assignment.policy.stated:
        _write(layout, result, metadata)
        return GradescopeRun(layout.results_json, result)
    outcome = with_policy(result, assignment, facts)
    _write(layout, outcome.result, metadata, outcome)
    return GradescopeRun(layout.results_json, outcome.result, policy=outcome)
