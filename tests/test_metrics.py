"""Scores from metrics (grader/grading/metrics.py) and the leaderboard, from a hidden test's fixture
call to the points, report.json, results.json and the batch summary page."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from grader.batch.summary import leaderboard_html
from grader.course.manifest import Assignment, load_assignment
from grader.grading.metrics import MetricScore, metric_credit
from grader.results.gradescope import results_dict
from grader.results.model import (
    MAX_LEADERBOARD_VALUE,
    GradingResult,
    LeaderboardEntry,
    PartResult,
    SubmissionInfo,
    TestResult,
)
from grader.results.report import Report, report_dict, report_from_dict
from grader.workers.protocol import decode_result, encode_result
from tests.support import COURSE_ROOT, run_grader_cli
from tests.test_gradescope import METADATA, SCHEMA
from tests.test_plugin import WRONG_STUDENT, run_hidden


@pytest.mark.parametrize(
    ("value", "low", "high", "credit"),
    [
        (0.8, 0.6, 0.9, 0.667),
        (0.9, 0.6, 0.9, 1.0),
        (0.99, 0.6, 0.9, 1.0),
        (0.6, 0.6, 0.9, 0.0),
        (0.1, 0.6, 0.9, 0.0),
        # Lower is better (a loss): high below low.
        (0.5, 2.0, 0.2, 0.833),
        (0.1, 2.0, 0.2, 1.0),
        (math.nan, 0.6, 0.9, 0.0),
        (math.inf, 0.6, 0.9, 0.0),
        (True, 0.0, 0.5, 0.0),
    ],
)
def test_credit_is_linear_between_the_thresholds(
    value: float, low: float, high: float, credit: float
) -> None:
    assert metric_credit(value, low=low, high=high) == credit


def test_thresholds_must_differ_and_be_finite() -> None:
    with pytest.raises(ValueError, match="two different finite numbers"):
        metric_credit(0.5, low=0.9, high=0.9)
    with pytest.raises(ValueError, match="two different finite numbers"):
        metric_credit(0.5, low=0.0, high=math.inf)


def test_the_feedback_states_value_thresholds_and_credit() -> None:
    text = MetricScore.of("held-out accuracy", 0.875, low=0.8, high=0.9).feedback()
    assert text == (
        "held-out accuracy: 0.875. Credit is linear from 0.8 (none) to 0.9 (full; higher is "
        "better): 75% of this test's points."
    )


# -- the `metric` and `leaderboard` fixtures, through the plugin and the scoring -------------

METRIC_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_doubles(compare, seed):
    """Doubles a random vector"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_accuracy(compare, seed, metric, leaderboard):
    """Share of entries equal to the reference's"""
    got, want = compare(fake_probes.doubled, seed=seed)
    close = ((got["y"] - want["y"]).abs() < 1e-6).float().mean()
    # 1.0 for a right double; the thresholds put a right one at three quarters of the points.
    metric(close, low=0.0, high=4 / 3, name="share close")
    leaderboard("<b>share</b>\\n close", close * 1e12)
    leaderboard("infinite", float("inf"), order="asc")


@pytest.mark.points(1)
def test_forged_accuracy(student, seed, metric):
    """A metric the student side computed itself"""
    got = student(fake_probes.doubled, seed=seed)
    metric(got["y"].abs().mean() * 0 + 1.0, low=0.0, high=1.0, name="forged")
'''


def test_a_metric_earns_its_credit_and_says_value_thresholds_and_credit(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {}, {"right": METRIC_TESTS})
    run.outcomes.assertoutcome(passed=3)
    tests = run.by_name()
    accuracy = tests["Share of entries equal to the reference's"]
    assert (accuracy.outcome, accuracy.credit, accuracy.gated) == ("passed", 0.75, False)
    assert accuracy.metric == MetricScore.of("share close", 1.0, low=0.0, high=4 / 3)
    assert accuracy.message == (
        "share close: 1. Credit is linear from 0 (none) to 1.333 (full; higher is better): "
        "75% of this test's points."
    )
    # The seeded comparison and three quarters of the metric open the part; the forged
    # metric, whose data came from `student` alone, counts only behind them.
    forged = tests["A metric the student side computed itself"]
    assert (forged.gated, forged.never_opens_gate, forged.credit) == (True, True, 1.0)
    assert run.scores() == {"right": pytest.approx(10 * (1 + 0.75 + 1) / 3)}


def test_a_metric_at_the_low_threshold_fails_and_scores_nothing(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {"wrong": WRONG_STUDENT}, {"wrong": METRIC_TESTS})
    accuracy = run.by_name()["Share of entries equal to the reference's"]
    assert (accuracy.outcome, accuracy.cause) == ("failed", "wrong answer")
    # Recorded even where it earns nothing: validate reads a weak model's figure from it.
    assert accuracy.metric == MetricScore.of("share close", 0.0, low=0.0, high=4 / 3)
    assert "share close: 0" in accuracy.message and "0% of this test's points" in accuracy.message
    # The comparison failed, so nothing opens the gate: the forged metric earns nothing.
    assert run.scores() == {"wrong": 0.0}


def test_a_metric_only_part_whose_data_comes_from_student_never_scores(
    pytester: pytest.Pytester,
) -> None:
    # The last test of METRIC_TESTS alone.
    forged = METRIC_TESTS[METRIC_TESTS.index("\n\n@pytest.mark.points(1)\ndef test_forged") :]
    forged_only = "import pytest\nimport fake_probes\n" + forged
    run = run_hidden(pytester, {}, {"right": forged_only})
    run.outcomes.assertoutcome(passed=1)
    assert run.scores() == {"right": 0.0}


def test_leaderboard_entries_are_bounded_and_cleaned(pytester: pytest.Pytester) -> None:
    run = run_hidden(pytester, {}, {"right": METRIC_TESTS})
    entries = run.by_name()["Share of entries equal to the reference's"].leaderboard
    assert entries == (
        LeaderboardEntry("<b>share</b>\ufffd close", MAX_LEADERBOARD_VALUE, "desc"),
        LeaderboardEntry("infinite", 0.0, "asc"),
    )
    with pytest.raises(ValueError, match="'asc' or 'desc'"):
        LeaderboardEntry("x", 1.0, "up")  # type: ignore[arg-type]


def graded(
    name: str,
    entries: tuple[LeaderboardEntry, ...],
    *,
    credit: float = 1.0,
    metric: MetricScore | None = None,
) -> GradingResult:
    test = TestResult(
        name="held-out accuracy",
        part="train",
        outcome="passed",
        weight=1.0,
        score=10.0 * credit,
        max_score=10.0,
        credit=credit,
        leaderboard=entries,
        metric=metric,
    )
    return GradingResult(
        assignment="fake",
        score=test.score,
        max_score=10.0,
        parts=(PartResult(id="train", file="train.py", score=test.score, max_score=10.0),),
        tests=(test,),
        seed=1,
        device="cpu",
        submission=SubmissionInfo(sha256=name, files=("train.py",)),
        duration_s=1.0,
    )


def test_results_json_carries_the_leaderboard_in_gradescope_format() -> None:
    entries = (
        LeaderboardEntry("accuracy", 0.93),
        LeaderboardEntry("seconds", 12.5, "asc"),
        LeaderboardEntry("accuracy", 0.1),
    )
    results = results_dict(graded("a", entries, credit=0.5))
    jsonschema.Draft202012Validator(SCHEMA).validate(results)
    assert results["leaderboard"] == [
        {"name": "accuracy", "value": 0.93, "order": "desc"},
        {"name": "seconds", "value": 12.5, "order": "asc"},
    ]
    assert results["tests"][0]["score"] == 5.0 and results["tests"][0]["status"] == "failed"
    assert "leaderboard" not in results_dict(graded("b", ()))


def test_report_json_keeps_credit_and_leaderboard() -> None:
    result = graded("a", (LeaderboardEntry("accuracy", 0.93),), credit=0.25)
    data = json.loads(json.dumps(report_dict(result)))
    back = report_from_dict(data).result
    assert back.tests[0].credit == 0.25
    assert back.leaderboard == (LeaderboardEntry("accuracy", 0.93),)
    assert "credit" not in report_dict(graded("b", ()))["tests"][0]


@pytest.mark.parametrize("value", [0.8, math.nan])
def test_report_json_and_the_workers_codec_keep_the_metric(value: float) -> None:
    metric = MetricScore.of("held-out accuracy", value, low=0.5, high=0.9)
    result = graded("a", (), credit=metric.credit, metric=metric)
    written = json.loads(json.dumps(report_dict(result), allow_nan=False))
    assert written["tests"][0]["metric"] == {
        "name": "held-out accuracy",
        "value": None if math.isnan(value) else value,
        "low": 0.5,
        "high": 0.9,
    }
    from_report = report_from_dict(written).result.tests[0].metric
    from_worker = decode_result(json.loads(json.dumps(encode_result(result)))).tests[0].metric
    for back in (from_report, from_worker):
        assert back is not None and (back.name, back.low, back.high) == (
            "held-out accuracy",
            0.5,
            0.9,
        )
        assert back.value == value or (math.isnan(back.value) and math.isnan(value))
    assert "metric" not in report_dict(graded("b", ()))["tests"][0]
    assert (
        decode_result(json.loads(json.dumps(encode_result(graded("b", ()))))).tests[0].metric
        is None
    )


def test_summary_ranks_students_and_escapes_what_they_control() -> None:
    students = [
        ("k1", "<script>alert(1)</script>", Report(graded("1", (LeaderboardEntry("acc", 0.5),)))),
        ("k2", "Ada", Report(graded("2", (LeaderboardEntry("acc", 0.9),)))),
        ("k3", "Bo", None),
        ("k4", "Cy", Report(graded("4", (LeaderboardEntry("<i>x</i>", 3.0, "asc"),)))),
    ]
    page = leaderboard_html(students)
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;i&gt;x" in page
    assert "Ranked by acc, highest first." in page
    # Ranked by the first column, higher first; a student without it comes last.
    assert page.index("Ada") < page.index("&lt;script&gt;") < page.index("Cy")
    assert "Bo" not in page
    assert leaderboard_html([("k3", "Bo", None)]) == ""
    # Equal figures share a rank; the next figure's rank counts the students above it.
    tied = [
        (key, key, Report(graded(key, (LeaderboardEntry("acc", value),))))
        for key, value in (("ta", 0.9), ("tb", 0.9), ("tc", 0.8))
    ]
    ranks = re.findall(r"<tr><td class=\"num\">(\d*)</td>", leaderboard_html(tied))
    assert ranks == ["1", "1", "3"]


# -- end to end: a batch's summary page and a Gradescope run of pytorch_training ---------------

# Gradescope's export metadata with names that are markup: students type their names.
MARKUP_NAMES = """\
submission_1:
  :submitters:
  - :name: "<script>alert('board')</script>"
    :sid: '1'
    :email: a@example.edu
submission_2:
  :submitters:
  - :name: "Bo <img src=x onerror=alert(2)>"
    :sid: '2'
    :email: b@example.edu
"""


def copy_reference(assignment: Assignment, folder: Path) -> None:
    folder.mkdir(parents=True)
    for part in assignment.parts:
        shutil.copy(assignment.solutions_dir / part.file, folder / part.file)


@pytest.mark.slow
def test_the_leaderboard_reaches_summary_html_escaped_and_results_json_valid(
    tmp_path: Path,
) -> None:
    assignment = load_assignment("pytorch_training")
    solutions = COURSE_ROOT / "solutions" / assignment.id
    export = tmp_path / "export"
    for key in ("submission_1", "submission_2"):
        copy_reference(assignment, export / key)
    # The second trains at a hundredth of the learning rate: lower on the board.
    shutil.copy(solutions / "weak" / "training.py", export / "submission_2" / "training.py")
    (export / "submission_metadata.yml").write_text(MARKUP_NAMES)
    out = tmp_path / "out"
    batch = run_grader_cli(
        *("batch", export, "-a", assignment.id, "--out", out, "--workers", "1"),
        *("--seed", "1", "--no-similarity"),
    )
    assert batch.returncode == 0, batch.stdout + batch.stderr
    page = (out / "summary.html").read_text(encoding="utf-8")
    board = page[page.index("<h2>Leaderboard</h2>") : page.index("<h2>Code similarity</h2>")]
    assert "Ranked by held-out accuracy, highest first." in board
    script, image = "&lt;script&gt;alert(&#x27;board&#x27;)&lt;/script&gt;", "Bo &lt;img src=x"
    assert board.index(script) < board.index(image)
    assert "<script" not in page and "<img" not in page

    root = tmp_path / "autograder"
    copy_reference(assignment, root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    gradescope = run_grader_cli(
        "gradescope", "--root", root, "-a", assignment.id, "--device", "cpu", "--seed", "1"
    )
    assert gradescope.returncode == 0, gradescope.stdout + gradescope.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(results)
    (accuracy,) = [e for e in results["leaderboard"] if e["name"] == "held-out accuracy"]
    assert accuracy["order"] == "desc" and accuracy["value"] > 0.9
    assert results["score"] == assignment.max_score
