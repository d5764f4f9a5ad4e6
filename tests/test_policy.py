"""Course policies: late penalties, submission limits, what the grade keeps, per-part visibility.

The end-to-end tests grade a one-part submission (the reference custom_sigmoid.py, 20 points)
with the manifest's policies, on folders laid out like Gradescope's /autograder with
Gradescope-shaped metadata, and in a `batch` over a Gradescope export; the rest checks the
manifest keys, the hostile metadata and the decisions one by one, without grading.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import io
import json
import shutil
import subprocess
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from grader.authoring.build import build_autograder
from grader.course.manifest import parse_manifest
from grader.course.policy.apply import apply_policy, duration, when
from grader.course.policy.config import CoursePolicy, LatePenalty, SubmissionLimit, parse_policy
from grader.course.policy.metadata import EarlierSubmission, SubmissionFacts, gradescope_facts
from grader.errors import ConfigError
from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult
from tests.support import SOLUTIONS_DIR, run_grader_cli
from tests.test_gradescope import METADATA as GRADESCOPE_METADATA
from tests.test_gradescope import run_command, validate

POLICY = """
[policy]
keep = "last"

[policy.late]
percent = 10
per = "day"
max_percent = 50
grace_minutes = 15
due = 2026-07-31T23:00:00-07:00

[policy.late.extensions]
"ada@example.edu" = 2026-08-05T23:00:00-07:00

[policy.limit]
graded = 3
per = "day"
"""
METADATA: dict[str, Any] = GRADESCOPE_METADATA
DUE = "2026-07-31T23:00:00.000000-07:00"
PACIFIC = timezone(timedelta(hours=-7))
KEEP_LAST = "Your grade is the score of your last graded submission: this one."
CHECK = "Meanwhile, `python -m grader check` runs the public tests on your own machine."


# -- the manifest ------------------------------------------------------------------------------


def manifest(tmp_path: Path, extra: str, *, part_extra: str = "") -> Path:
    folder = tmp_path / "assignments" / "hw"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "assignment.toml"
    path.write_text(
        '[assignment]\nid = "hw"\n\n[[parts]]\nid = "p"\nfile = "p.py"\npoints = 10\n'
        + part_extra
        + extra,
        encoding="utf-8",
    )
    return path


def test_the_policies_are_read_from_the_manifest(tmp_path: Path) -> None:
    path = manifest(tmp_path, POLICY, part_extra='visibility = "after_due_date"\n')
    assignment = parse_manifest(path)
    policy = assignment.policy
    due = datetime(2026, 7, 31, 23, tzinfo=PACIFIC)
    assert policy == CoursePolicy(
        keep="last",
        late=LatePenalty(
            percent=10.0,
            per="day",
            max_percent=50.0,
            grace_minutes=15.0,
            due=due,
            extensions=(("ada@example.edu", due + timedelta(days=5)),),
        ),
        limit=SubmissionLimit(graded=3, per="day"),
        stated=True,
    )
    assert assignment.hidden_visibility_of(assignment.parts[0]) == "after_due_date"
    plain = parse_manifest(manifest(tmp_path / "plain", ""))
    assert plain.policy == CoursePolicy() and not plain.policy.stated
    assert plain.hidden_visibility_of(plain.parts[0]) == "after_published"


@pytest.mark.parametrize(
    ("snippet", "named"),
    [
        ('[policy]\nkeep = "first"\n', "[policy] keep = 'first'"),
        ("[policy]\nlate = 3\n", "[policy.late] must be a table"),
        ("[policy]\nlimits = {}\n", "[policy] has unknown keys ['limits']"),
        ("[policy.late]\nper = 'day'\n", "[policy.late] needs percent"),
        ("[policy.late]\npercent = 150\n", "[policy.late] percent = 150"),
        ("[policy.late]\npercent = true\n", "[policy.late] percent = True"),
        ("[policy.late]\npercent = 10\nper = 'week'\n", "[policy.late] per = 'week'"),
        ("[policy.late]\npercent = 10\nmax_percent = -1\n", "[policy.late] max_percent = -1"),
        ("[policy.late]\npercent = 10\ngrace_minutes = nan\n", "[policy.late] grace_minutes"),
        ("[policy.late]\npercent = 10\ndue = 2026-07-31T23:00:00\n", "[policy.late] due"),
        ("[policy.late]\npercent = 10\ndue = 'Friday'\n", "[policy.late] due = 'Friday'"),
        (
            "[policy.late]\npercent = 10\n[policy.late.extensions]\nbob = 2026-08-01\n",
            "[policy.late].extensions 'bob'",
        ),
        ("[policy.limit]\ngraded = 0\n", "[policy.limit] graded = 0"),
        ("[policy.limit]\ngraded = 2.5\n", "[policy.limit] graded = 2.5"),
        ("[policy.limit]\ngraded = 2\nper = 'week'\n", "[policy.limit] per = 'week'"),
    ],
)
def test_a_wrong_policy_names_the_file_and_key(tmp_path: Path, snippet: str, named: str) -> None:
    path = manifest(tmp_path, snippet)
    with pytest.raises(ConfigError) as error:
        parse_manifest(path)
    assert str(error.value).startswith(f"{path}: ") and named in str(error.value)


def test_a_wrong_part_visibility_names_the_part(tmp_path: Path) -> None:
    path = manifest(tmp_path, "", part_extra='visibility = "later"\n')
    with pytest.raises(ConfigError, match=r"\[\[parts\]\] 'p' visibility = 'later'"):
        parse_manifest(path)


# -- the metadata: hostile, never raising, never a penalty not earned --------------------------


def test_gradescope_metadata_gives_the_times_and_the_students_own_due_date() -> None:
    data = {
        **METADATA,
        "created_at": "2026-08-01T00:00:00.000000-07:00",
        "assignment": {**METADATA["assignment"], "due_date": DUE, "late_due_date": None},
        "users": [
            {
                "email": "Student@Example.com",
                "id": 1234,
                "sid": 77,
                "assignment": {"due_date": "2026-08-02T23:00:00Z"},
            }
        ],
        "previous_submissions": [
            {"submission_time": "2026-07-31T10:00:00-07:00", "score": "12.5"},
            {"submission_time": "2026-07-30T10:00:00-07:00", "score": 3, "autograder_error": True},
        ],
    }
    facts = gradescope_facts(data)
    assert facts == SubmissionFacts(
        submitted_at=datetime(2026, 8, 1, tzinfo=PACIFIC),
        due_dates=(
            datetime(2026, 7, 31, 23, tzinfo=PACIFIC),
            datetime(2026, 8, 2, 23, tzinfo=timezone.utc),
        ),
        members=("student@example.com", "77"),
        earlier=(
            EarlierSubmission(datetime(2026, 7, 30, 10, tzinfo=PACIFIC), 3.0, grader_error=True),
            EarlierSubmission(datetime(2026, 7, 31, 10, tzinfo=PACIFIC), 12.5),
        ),
        notes=(),
    )


@pytest.mark.parametrize(
    ("data", "expected", "note"),
    [
        ([1, 2], SubmissionFacts(due_dates=None), "not a JSON object"),
        ({}, SubmissionFacts(), "created_at is missing"),
        ({"created_at": "2026-13-45T99:00"}, SubmissionFacts(), "created_at is '2026-13-45T99:00'"),
        ({"created_at": "2026-07-31T23:00:00"}, SubmissionFacts(), "not a time with a UTC offset"),
        ({"created_at": "2" * 10_000}, SubmissionFacts(), "created_at is '2222"),
        ({"created_at": 1722470400}, SubmissionFacts(), "created_at is 1722470400"),
        (
            {"assignment": {"due_date": ["soon"]}},
            SubmissionFacts(due_dates=None),
            "assignment.due_date is ['soon']",
        ),
        (
            {"users": [{"assignment": {"due_date": "tomorrow"}}, "x", None]},
            SubmissionFacts(due_dates=None),
            "users[0].assignment.due_date is 'tomorrow'",
        ),
        ({"previous_submissions": {"a": 1}}, SubmissionFacts(), "previous_submissions is dict"),
        (
            {"previous_submissions": [{}] * 10_001},
            SubmissionFacts(),
            "a list of 10001, not a list of at most 10000",
        ),
        (
            {"previous_submissions": [{"submission_time": None, "score": 1}]},
            SubmissionFacts(),
            "previous_submissions[0].submission_time is None",
        ),
        ({"previous_submissions": ["\x1b[31m"]}, SubmissionFacts(), "previous_submissions[0] is"),
    ],
)
def test_malformed_metadata_gives_no_fact_and_a_staff_note(
    data: object, expected: SubmissionFacts, note: str
) -> None:
    facts = gradescope_facts(data)
    assert dataclasses.replace(facts, notes=()) == expected
    assert any(note in line for line in facts.notes), facts.notes
    assert all(len(line) < 300 and "\x1b" not in line for line in facts.notes)


def test_earlier_scores_that_are_not_numbers_are_kept_as_unknown() -> None:
    times = [f"2026-07-2{i}T10:00:00-07:00" for i in range(5)]
    scores: list[object] = [True, "NaN", float("inf"), "9" * 40, {"score": 1}]
    facts = gradescope_facts(
        {
            "created_at": "2026-08-01T10:00:00-07:00",
            "previous_submissions": [
                {"submission_time": t, "score": s} for t, s in zip(times, scores, strict=True)
            ],
        }
    )
    assert facts.earlier is not None
    assert [entry.score for entry in facts.earlier] == [None] * 5


# -- the decisions, without grading -------------------------------------------------------------


def graded_result(score: float, *, visibility: str = "after_published") -> GradingResult:
    test = TestResult(
        name="sigmoid matches",
        part="p",
        outcome="passed" if score == 20 else "failed",
        weight=1.0,
        score=score,
        max_score=20.0,
        visibility=visibility,
    )
    return GradingResult(
        assignment="hw",
        score=score,
        max_score=20.0,
        parts=(PartResult("p", "p.py", score, 20.0),),
        tests=(test,),
        seed=1,
        device="cpu",
        submission=SubmissionInfo("", ("p.py",)),
        duration_s=1.0,
    )


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 7, day, hour, minute, tzinfo=PACIFIC)


LATE = LatePenalty(percent=10.0, max_percent=50.0, grace_minutes=15.0)


def facts(submitted: datetime, *earlier: tuple[datetime, float | None], **more: Any) -> Any:
    return SubmissionFacts(
        submitted_at=submitted,
        due_dates=more.pop("due_dates", (at(31, 23),)),
        earlier=tuple(EarlierSubmission(t, s) for t, s in earlier),
        **more,
    )


def test_a_policy_free_manifest_changes_nothing() -> None:
    result = graded_result(17.0)
    outcome = apply_policy(result, CoursePolicy(), SubmissionFacts(due_dates=None))
    assert outcome.result is result and not outcome.messages and not outcome.staff_notes


@pytest.mark.parametrize(
    ("submitted", "score", "message"),
    [
        (at(31, 23, 10), 20.0, "Submitted 10 minutes after the due date (2026-07-31 23:00 "
         "UTC-07:00), within the 15-minute grace period: no late penalty."),
        (at(31, 23, 16), 18.0, "Late: submitted 16 minutes after the due date (2026-07-31 23:00 "
         "UTC-07:00), which counts as 1 day late; at 10% per day, 10% of this submission's score "
         "is deducted."),
        (at(31, 23) + timedelta(days=9), 10.0, "Late: submitted 9 days after the due date "
         "(2026-07-31 23:00 UTC-07:00), which counts as 9 days late; at 10% per day, 50% of this "
         "submission's score is deducted (the most ever deducted is 50%)."),
    ],
)  # fmt: skip
def test_the_late_penalty_counts_started_days_after_the_grace_period(
    submitted: datetime, score: float, message: str
) -> None:
    policy = CoursePolicy(late=LATE, stated=True)
    outcome = apply_policy(graded_result(20.0), policy, facts(submitted))
    assert outcome.score == score and outcome.earned == 20.0
    assert outcome.messages == (message, KEEP_LAST)


def test_per_hour_shows_points_only_where_the_score_is_shown() -> None:
    hourly = dataclasses.replace(LATE, per="hour", percent=1.0, grace_minutes=0.0)
    policy = CoursePolicy(late=hourly, stated=True)
    shown = apply_policy(graded_result(15.0, visibility="visible"), policy, facts(at(31, 23, 1)))
    hidden = apply_policy(graded_result(15.0), policy, facts(at(31, 23, 1)))
    assert shown.score == hidden.score == pytest.approx(14.85)
    assert shown.messages[0].endswith("1% of this submission's score is deducted (0.15 points).")
    assert "points" not in hidden.messages[0]


def test_the_manifest_extension_and_the_latest_due_date_win() -> None:
    extended = dataclasses.replace(
        LATE, extensions=(("ada@example.edu", at(31, 23) + timedelta(2)),)
    )
    policy = CoursePolicy(late=extended, stated=True)
    ada = facts(at(31, 23) + timedelta(days=1), members=("ada@example.edu",))
    assert apply_policy(graded_result(20.0), policy, ada).score == 20.0
    bob = facts(at(31, 23) + timedelta(days=1), members=("bob@example.edu",))
    assert apply_policy(graded_result(20.0), policy, bob).score == 18.0
    # Two due dates in the metadata (the assignment's, a member's own): the later counts.
    group = facts(at(31, 23) + timedelta(days=1), due_dates=(at(31, 23), at(31, 23) + timedelta(3)))
    outcome = apply_policy(graded_result(20.0), policy, group)
    assert outcome.score == 20.0
    assert outcome.messages[0] == (
        "Submitted on time for your extended due date (2026-08-03 23:00 UTC-07:00)."
    )


def test_no_due_date_or_an_unreadable_one_means_no_penalty() -> None:
    policy = CoursePolicy(late=LATE, stated=True)
    for case in (
        facts(at(31, 23) + timedelta(days=3), due_dates=()),
        facts(at(31, 23) + timedelta(days=3), due_dates=None),
        SubmissionFacts(submitted_at=None, due_dates=(at(31, 23),)),
    ):
        outcome = apply_policy(graded_result(20.0), policy, case)
        assert outcome.score == 20.0 and outcome.late is None
        assert outcome.messages == (KEEP_LAST,)
        assert any("no late penalty" in note for note in outcome.staff_notes)


def test_keep_best_never_lowers_the_grade_and_names_numbers_only_when_shown() -> None:
    policy = CoursePolicy(keep="best", late=LATE, stated=True)
    history = facts(at(31, 23) + timedelta(days=1), (at(30, 9), 17.0), (at(30, 10), 12.0))
    hidden = apply_policy(graded_result(20.0), policy, history)
    assert hidden.score == 18.0 and hidden.kept_from is None
    shown = apply_policy(graded_result(15.0, visibility="visible"), policy, history)
    assert shown.after_penalty == 13.5 and shown.score == 17.0 and shown.kept_from == at(30, 9)
    assert shown.messages[-1] == (
        "Your grade is the best score of your graded submissions: a lower score does not lower "
        "it. Your best so far, 17 / 20, from your submission of 2026-07-30 09:00 UTC-07:00, is "
        "kept."
    )
    unreadable = facts(at(31, 22), (at(30, 9), None))
    outcome = apply_policy(graded_result(15.0), policy, unreadable)
    assert outcome.score == 15.0
    assert any("no readable score" in note for note in outcome.staff_notes)


def test_the_limit_replays_the_history_and_grader_errors_do_not_count() -> None:
    policy = CoursePolicy(limit=SubmissionLimit(graded=2), stated=True)
    # 09:00 and 10:00 graded; 11:00 was past the limit then (its recorded score, 5, is the
    # kept one and never counts); the grader failed at 12:00; 09:30 the next day is graded.
    history = [(at(30, 9), 10.0), (at(30, 10), 12.0), (at(30, 11), 5.0), (at(30, 12), 0.0)]
    base = facts(at(30, 13), *history)
    earlier = base.earlier
    assert earlier is not None
    marked = (*earlier[:3], dataclasses.replace(earlier[3], grader_error=True))
    limited = apply_policy(graded_result(20.0), policy, dataclasses.replace(base, earlier=marked))
    assert not limited.graded and limited.score == 12.0 and limited.kept_from == at(30, 10)
    assert [t.visibility for t in limited.result.tests] == ["hidden"]
    assert (
        "next graded submission is possible from 2026-07-31 09:00 UTC-07:00"
        in (limited.messages[0])
    )
    later = facts(at(31, 9, 30), *history)
    outcome = apply_policy(graded_result(20.0), policy, later)
    assert outcome.graded and outcome.score == 20.0
    assert outcome.messages[0] == (
        "This is graded submission 2 of the 2 you get in any 24 hours. Your next graded "
        "submission is possible from 2026-07-31 10:00 UTC-07:00."
    )


def test_a_limit_in_all_with_keep_best() -> None:
    policy = CoursePolicy(keep="best", limit=SubmissionLimit(graded=2, per="all"), stated=True)
    history = facts(at(31, 9), (at(1, 9), 14.0), (at(2, 9), 11.0))
    outcome = apply_policy(graded_result(20.0, visibility="visible"), policy, history)
    assert not outcome.graded and outcome.score == 14.0
    assert outcome.messages == (
        "Not graded: you have made the 2 graded submissions you get for this assignment. This "
        "submission's hidden test results are not shown and do not count: your grade keeps the "
        "best score of your graded submissions (14 / 20), from your submission of 2026-07-01 "
        f"09:00 UTC-07:00. No further submission will be graded. {CHECK}",
    )


def test_past_the_limit_without_readable_history_is_graded() -> None:
    policy = CoursePolicy(limit=SubmissionLimit(graded=1), stated=True)
    no_history = SubmissionFacts(submitted_at=at(31, 9), earlier=None)
    outcome = apply_policy(graded_result(20.0), policy, no_history)
    assert outcome.graded and outcome.score == 20.0 and outcome.limit is None
    unreadable = facts(at(31, 9), (at(31, 8), None))
    outcome = apply_policy(graded_result(20.0), policy, unreadable)
    assert outcome.graded and outcome.score == 20.0
    assert any("no earlier graded score is readable" in n for n in outcome.staff_notes)


def test_a_grader_error_gets_no_policy() -> None:
    result = dataclasses.replace(graded_result(5.0), grader_error="worker died")
    policy = CoursePolicy(late=LATE, stated=True)
    outcome = apply_policy(result, policy, facts(at(31, 23) + timedelta(days=3)))
    assert outcome.score == 5.0 and not outcome.messages


def test_times_and_durations_read_well() -> None:
    assert (
        when(datetime(2026, 8, 1, 6, tzinfo=timezone.utc), PACIFIC) == "2026-07-31 23:00 UTC-07:00"
    )
    assert when(datetime(2026, 8, 1, 6, tzinfo=timezone.utc), None) == "2026-08-01 06:00 UTC"
    assert duration(timedelta(seconds=30)) == "less than a minute"
    assert duration(timedelta(days=3, minutes=2)) == "3 days 2 minutes"
    assert duration(timedelta(days=1, hours=2, minutes=3)) == "1 day 2 hours"


# -- end to end: Gradescope-shaped roots and a batch over an export ------------------------------


@pytest.fixture(scope="module")
def policy_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The autograder zip, unpacked, its manifest with POLICY and custom_sigmoid's hidden tests
    shown after the due date."""
    base = tmp_path_factory.mktemp("policy-course")
    built = build_autograder("pytorch_basics", output=base / "autograder.zip").path
    course = base / "source"
    with zipfile.ZipFile(built) as archive:
        archive.extractall(course)
    path = course / "assignments" / "pytorch_basics" / "assignment.toml"
    text = path.read_text(encoding="utf-8")
    part = 'file = "custom_sigmoid.py"\n'
    assert part in text
    text = text.replace(part, part + 'visibility = "after_due_date"\n')
    path.write_text(text + POLICY, encoding="utf-8")
    return course


def metadata(created_at: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(METADATA)
    data["created_at"] = created_at
    data["assignment"]["due_date"] = DUE
    data.update(changes)
    return data


EXTENDED_USER = {**METADATA["users"][0], "assignment": {"due_date": "2026-08-05T23:00:00-07:00"}}
HISTORY = [
    {"submission_time": "2026-07-28T09:00:00-07:00", "score": 20.0},
    {"submission_time": "2026-07-30T08:00:00-07:00", "score": 0.0, "autograder_error": True},
    {"submission_time": "2026-07-30T09:00:00-07:00", "score": 12.5},
    {"submission_time": "2026-07-30T10:00:00-07:00", "score": 17.5},
    {"submission_time": "2026-07-30T11:00:00-07:00", "score": 15.0},
]
GRADED_FIRST = "This is graded submission 1 of the 3 you get in any 24 hours."
# Case -> (metadata, score, the student messages, a phrase of the staff notes).
CASES: dict[str, tuple[dict[str, Any], float, list[str], str]] = {
    "on-time": (metadata("2026-07-31T22:00:00.000000-07:00"), 20.0, [GRADED_FIRST, KEEP_LAST], ""),
    "late-an-hour": (
        metadata("2026-08-01T00:00:00.000000-07:00"),
        18.0,
        [
            "Late: submitted 1 hour after the due date (2026-07-31 23:00 UTC-07:00), which counts "
            "as 1 day late; at 10% per day, 10% of this submission's score is deducted.",
            GRADED_FIRST,
            KEEP_LAST,
        ],
        "",
    ),
    "late-three-days": (
        metadata("2026-08-03T23:00:00.000000-07:00"),
        14.0,
        [
            "Late: submitted 3 days after the due date (2026-07-31 23:00 UTC-07:00), which counts "
            "as 3 days late; at 10% per day, 30% of this submission's score is deducted.",
            GRADED_FIRST,
            KEEP_LAST,
        ],
        "",
    ),
    "extension": (
        metadata("2026-08-03T23:00:00.000000-07:00", users=[EXTENDED_USER]),
        20.0,
        [
            "Submitted on time for your extended due date (2026-08-05 23:00 UTC-07:00).",
            GRADED_FIRST,
            KEEP_LAST,
        ],
        "",
    ),
    "past-the-limit": (
        metadata("2026-07-30T12:00:00.000000-07:00", previous_submissions=HISTORY),
        15.0,
        [
            "Not graded: you have made the 3 graded submissions you get in any 24 hours. This "
            "submission's hidden test results are not shown and do not count: your grade keeps "
            "the score of your last graded submission, from your submission of 2026-07-30 11:00 "
            "UTC-07:00. Your next graded submission is possible from 2026-07-31 09:00 UTC-07:00. "
            + CHECK
        ],
        "",
    ),
    "malformed-date": (
        metadata("2026-13-45T99:00:00-07:00"),
        20.0,
        [KEEP_LAST],
        "created_at is '2026-13-45T99:00:00-07:00', not a time with a UTC offset",
    ),
}


@pytest.fixture(scope="module")
def gradescope_runs(
    tmp_path_factory: pytest.TempPathFactory, policy_course: Path
) -> dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any]]]:
    base = tmp_path_factory.mktemp("policy-gradescope")
    runs = {}
    for case, (data, _score, _messages, _note) in CASES.items():
        root = base / case
        shutil.copytree(policy_course, root / "source")
        (root / "submission").mkdir()
        (root / "results").mkdir()
        shutil.copy(SOLUTIONS_DIR / "custom_sigmoid.py", root / "submission")
        (root / "submission_metadata.json").write_text(json.dumps(data), encoding="utf-8")
        process = run_command(root)
        results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        runs[case] = (process, results)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradescope_applies_the_policies(
    gradescope_runs: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any]]], case: str
) -> None:
    process, results = gradescope_runs[case]
    _data, score, messages, note = CASES[case]
    assert process.returncode == 0, process.stderr
    validate(results)
    assert results["extra_data"]["grader_error"] is None
    policy = results["extra_data"]["policy"]
    assert results["score"] == pytest.approx(score) and policy["score"] == pytest.approx(score)
    assert policy["earned"] == pytest.approx(20.0)
    assert policy["messages"] == messages
    for line in messages:
        assert line in results["output"].splitlines()
    assert (note in "\n".join(policy["staff_notes"])) if note else not policy["staff_notes"]
    counted = [t for t in results["tests"] if t["max_score"] > 0]
    sigmoid = [t for t in counted if "custom_sigmoid" in t["tags"]]
    assert sigmoid and sum(t["score"] for t in sigmoid) == pytest.approx(20.0)
    if case == "past-the-limit":
        assert not policy["graded"]
        assert {t["visibility"] for t in counted} == {"hidden"}
        # No part's score, not even "graded; shown later": the output is the message and
        # what is wrong with the files.
        assert "custom_sigmoid" not in results["output"]
        assert "manual_backprop: file missing" in results["output"].splitlines()
    else:
        assert policy["graded"]
        assert {t["visibility"] for t in sigmoid} == {"after_due_date"}
        assert {t["visibility"] for t in counted if t not in sigmoid} == {"after_published"}
        assert "custom_sigmoid: graded; its score is shown after the due date" in results["output"]


EXPORT_METADATA = """\
submission_1:
  :submitters:
  - :name: Ada Lovelace
    :email: ada@example.edu
  :created_at: !ruby/object:ActiveSupport::TimeWithZone
    utc: 2026-08-02 07:00:00.000000000 Z
    zone: !ruby/object:ActiveSupport::TimeZone
      name: America/Los_Angeles
    time: 2026-08-02 00:00:00.000000000 Z
submission_2:
  :submitters:
  - :name: Grace Hopper
    :email: grace@example.edu
    :sid: '201'
  :created_at: !ruby/object:ActiveSupport::TimeWithZone
    utc: 2026-08-02 07:00:00.000000000 Z
submission_3:
  :submitters:
  - :name: Alan Turing
    :email: alan@example.edu
  :created_at: 2026-07-31 06:00:00.000000000 Z
submission_4:
  :submitters:
  - :name: Edsger Dijkstra
    :email: edsger@example.edu
  :created_at: [not, a, time]
"""


@pytest.mark.slow
def test_batch_over_an_export_writes_the_total_before_and_after_the_penalty(
    tmp_path: Path, policy_course: Path
) -> None:
    export = tmp_path / "assignment_9_export"
    for number in range(1, 5):
        folder = export / f"submission_{number}"
        folder.mkdir(parents=True)
        shutil.copy(SOLUTIONS_DIR / "custom_sigmoid.py", folder)
    (export / "submission_metadata.yml").write_text(EXPORT_METADATA, encoding="utf-8")
    out = tmp_path / "out"
    result = run_grader_cli(
        "batch",
        export,
        "--course",
        policy_course,
        "--out",
        out,
        "--workers",
        "2",
        "--seed",
        "5",
        "--no-similarity",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
    assert [
        (row["student"], row["total before penalty"], row["late penalty"], row["total"])
        for row in rows
    ] == [
        # 25 hours late, but Ada's extension runs to 2026-08-05.
        ("Ada Lovelace", "20", "on time", "20"),
        ("Grace Hopper", "20", "-20% (2 days late)", "16"),
        ("Alan Turing", "20", "on time", "20"),
        ("Edsger Dijkstra", "20", "not applied", "20"),
    ]
    assert list(rows[0])[:6] == [
        "student",
        "email",
        "submission",
        "total",
        "total before penalty",
        "late penalty",
    ]
    canvas = list(csv.reader(io.StringIO((out / "gradebook-canvas.csv").read_text())))
    assert [(line[0], line[-1]) for line in canvas[2:]] == [
        ("Ada Lovelace", "20"),
        ("Grace Hopper", "16"),
        ("Alan Turing", "20"),
        ("Edsger Dijkstra", "20"),
    ]
    assert "submission_4: no late penalty" in result.stderr + result.stdout


def test_export_times_come_back_as_iso_text(tmp_path: Path) -> None:
    from grader.batch.metadata import read_export_metadata

    path = tmp_path / "submission_metadata.yml"
    path.write_text(EXPORT_METADATA, encoding="utf-8")
    entries = read_export_metadata(path)
    assert {key: entry.created_at for key, entry in entries.items()} == {
        "submission_1": "2026-08-02T07:00:00+00:00",
        "submission_2": "2026-08-02T07:00:00+00:00",
        "submission_3": "2026-07-31T06:00:00+00:00",
        "submission_4": "",
    }


def test_the_regrade_diff_shows_the_late_deduction(tmp_path: Path) -> None:
    from grader.batch.gradebook import ScoreChange, write_regrade_diff

    policy = CoursePolicy(late=LATE, stated=True)
    late = {"grace": apply_policy(graded_result(15.0), policy, facts(at(31, 23) + timedelta(2)))}
    changes = [ScoreChange("grace", "Grace Hopper", 12.0, 15.0, {"p": (12.0, 15.0)})]
    path = tmp_path / "regrade-diff.csv"
    write_regrade_diff(path, changes, late)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert rows == [
        {
            "submission": "grace",
            "student": "Grace Hopper",
            "before": "12",
            "after": "15",
            "change": "3",
            "parts changed": "p: 12 -> 15",
            "late deduction": "3",
            "after penalty": "12",
        }
    ]
    write_regrade_diff(path, changes)
    assert (
        path.read_text().splitlines()[0] == "submission,student,before,after,change,parts changed"
    )


def test_without_a_policy_results_json_has_no_policy_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.course.manifest import load_assignment
    from grader.grading.grade import GradeSettings
    from grader.grading.gradescope_run import run_gradescope

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission_metadata.json").write_text("{not json", encoding="utf-8")
    assignment = load_assignment("pytorch_basics")
    graded = dataclasses.replace(graded_result(20.0), assignment=assignment.id)
    monkeypatch.setattr("grader.grading.gradescope_run.grade_in_worker", lambda *_args: graded)
    run = run_gradescope(root, assignment_name=assignment.id, settings=GradeSettings(device="cpu"))
    results = json.loads(run.results_path.read_text())
    validate(results)
    assert run.policy is None and "policy" not in results["extra_data"]
    assert results["score"] == 20.0


def test_deeply_nested_or_oversized_metadata_reads_as_none(tmp_path: Path) -> None:
    from grader.grading.gradescope_run import MAX_METADATA_BYTES, load_metadata, submission_facts

    path = tmp_path / "submission_metadata.json"
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    assert load_metadata(path) is None
    with path.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_METADATA_BYTES + 1)
    assert load_metadata(path) is None
    facts = submission_facts(None)
    assert facts.due_dates is None and "missing, too large or not JSON" in facts.notes[0]


HOSTILE_VALUES: list[object] = [
    None,
    True,
    -1,
    1e308,
    "",
    "\ud800",
    "9999-12-31T23:59:59+14:00",
    "0001-01-01T00:00:00-12:00",
    [],
    {},
    [[[]]],
    {"due_date": {"due_date": "x"}},
]


@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=repr)
def test_any_field_of_any_shape_never_raises_nor_costs_points(value: object) -> None:
    policy = parse_policy(
        {"keep": "best", "late": {"percent": 10}, "limit": {"graded": 1}}, Path("x.toml")
    )
    shapes = [
        {"created_at": value},
        {"created_at": "2026-08-01T00:00:00-07:00", "assignment": {"due_date": value}},
        {"created_at": "2026-08-01T00:00:00-07:00", "assignment": value, "users": value},
        {"created_at": "2026-08-01T00:00:00-07:00", "users": [{"assignment": value}]},
        {"created_at": "2026-08-01T00:00:00-07:00", "previous_submissions": [value]},
        {
            "created_at": "2026-08-01T00:00:00-07:00",
            "previous_submissions": [{"submission_time": value, "score": value}],
        },
        {
            "created_at": "2026-08-01T00:00:00-07:00",
            "previous_submissions": [
                {"submission_time": "2026-07-31T00:00:00-07:00", "score": value}
            ],
        },
    ]
    for data in shapes:
        outcome = apply_policy(graded_result(20.0), policy, gradescope_facts(data))
        # Without a readable due date, history and scores, nothing is deducted or withheld.
        assert outcome.score == 20.0 and outcome.graded, (data, outcome.staff_notes)
