from __future__ import annotations

import dataclasses

import pytest

from grader.course.manifest import load_assignment
from grader.grading.scoring import GATED_ALL_NOTE, GATED_NOTE, WAITS_FOR_ANY_OPENER, score_tests
from grader.results.model import (
    GradingResult,
    LeaderboardEntry,
    Outcome,
    SubmissionInfo,
    TestResult,
)

ASSIGNMENT = load_assignment("pytorch_basics")


def result(
    part: str,
    outcome: Outcome,
    weight: float = 1.0,
    *,
    static: bool = False,
    function: str = "test_values",
) -> TestResult:
    """A result of `function` (one test function, any parameter set); `static`: a rule."""
    return TestResult(
        name=f"{part}-{function}-{outcome}",
        part=part,
        outcome=outcome,
        weight=weight,
        gated=static,
        marked_gated=static,
        function="test_rule" if static else function,
    )


def scores(tests: list[TestResult]) -> dict[str, float]:
    parts, _ = score_tests(ASSIGNMENT, tests, sources={}, problems={})
    return {p.id: p.score for p in parts}


def test_weights_are_normalised_to_the_manifest_points() -> None:
    tests = [result("manual_backprop", "passed", 1), result("manual_backprop", "failed", 3)]
    assert scores(tests)["manual_backprop"] == pytest.approx(5.0)  # 1/4 of 20


def test_every_part_is_listed_and_parts_without_tests_score_zero() -> None:
    parts, _ = score_tests(ASSIGNMENT, [], sources={}, problems={})
    assert [p.id for p in parts] == [p.id for p in ASSIGNMENT.parts]
    assert all(p.score == 0 and p.source == "missing" for p in parts)


def test_static_rule_alone_earns_nothing() -> None:
    tests = [
        result("manual_backprop", "passed", 2, static=True),
        result("manual_backprop", "error", 18),
    ]
    parts, scored = score_tests(ASSIGNMENT, tests, sources={}, problems={})
    assert parts[0].score == 0
    # What it waits for is named once, beside the message (every output shows both).
    assert scored[0].waits_for == "'manual_backprop-test_values-error'"
    assert GATED_ALL_NOTE in scored[0].message
    assert "manual_backprop-test_values-error" not in scored[0].message


def test_a_gated_test_that_names_no_function_waits_for_every_seeded_function() -> None:
    """Implementing one function of a part does not unlock forged checks of another."""
    loader_check = result("dataloader_training", "passed", 5, static=True)
    evaluate = result("dataloader_training", "passed", 4, function="test_evaluate")
    train = result("dataloader_training", "failed", 4, function="test_train")
    parts, scored = score_tests(
        ASSIGNMENT, [loader_check, evaluate, train], sources={}, problems={}
    )
    assert parts[4].id == "dataloader_training"
    assert parts[4].score == pytest.approx(15 * 4 / 13)
    assert scored[0].score == 0 and "'dataloader_training-test_train-failed'" in scored[0].waits_for
    # One passing parameter set of each seeded function is enough.
    trained = dataclasses.replace(train, outcome="passed")
    parts, scored = score_tests(
        ASSIGNMENT, [loader_check, evaluate, train, trained], sources={}, problems={}
    )
    assert scored[0].score > 0 and GATED_NOTE not in scored[0].message


def test_static_rule_counts_once_a_functional_test_passes() -> None:
    tests = [
        result("manual_backprop", "passed", 2, static=True),
        result("manual_backprop", "passed", 9),
        result("manual_backprop", "failed", 9),  # another parameter set of the same test
    ]
    assert scores(tests)["manual_backprop"] == pytest.approx(11.0)


def test_skipped_tests_carry_no_weight() -> None:
    tests = [result("device_benchmark", "passed", 4), result("device_benchmark", "skipped", 6)]
    parts, scored = score_tests(ASSIGNMENT, tests, sources={}, problems={})
    assert parts[-1].score == pytest.approx(10.0)
    assert scored[1].max_score == 0


def test_a_failure_in_one_part_costs_nothing_elsewhere() -> None:
    tests = [result("autograd_loop", "timeout"), result("two_layer_net", "passed")]
    got = scores(tests)
    assert got["autograd_loop"] == 0 and got["two_layer_net"] == 20


def test_test_scores_add_up_to_part_scores() -> None:
    weights: list[tuple[Outcome, float]] = [("passed", 3), ("passed", 1), ("failed", 3)]
    tests = [result("custom_sigmoid", outcome, weight) for outcome, weight in weights]
    parts, scored = score_tests(ASSIGNMENT, tests, sources={}, problems={})
    assert sum(t.score for t in scored) == pytest.approx(parts[2].score)
    assert sum(t.max_score for t in scored) == pytest.approx(20.0)


def test_full_marks_are_exact_whatever_the_weights() -> None:
    tests = [result("manual_backprop", "passed", w) for w in (1, 1, 1, 1, 1, 1, 1)]
    assert scores(tests)["manual_backprop"] == 20.0


def test_counts_after_waits_for_the_named_function_not_the_part() -> None:
    opener = TestResult(
        name="loss", part="manual_backprop", outcome="passed", weight=2, function="test_loss"
    )
    gradients = TestResult(
        name="gradients", part="manual_backprop", outcome="failed", weight=6, function="test_grad"
    )
    rule = TestResult(
        name="no autograd",
        part="manual_backprop",
        outcome="passed",
        weight=2,
        gated=True,
        counts_after=("test_grad",),
    )
    parts, scored = score_tests(ASSIGNMENT, [opener, gradients, rule], sources={}, problems={})
    # The loss opens the part, not the rule: 2 of 10 weights.
    assert parts[0].score == pytest.approx(4.0)
    assert scored[2].score == 0 and scored[2].waits_for == "'gradients'"
    passing = dataclasses.replace(gradients, outcome="passed")
    parts, _ = score_tests(ASSIGNMENT, [opener, passing, rule], sources={}, problems={})
    assert parts[0].score == pytest.approx(20.0)


def test_a_gated_pass_says_what_it_waits_for_and_a_counted_one_nothing() -> None:
    opener = TestResult("loss", "manual_backprop", "passed", 2, function="test_loss")
    grads = [
        TestResult(f"gradients [{dtype}]", "manual_backprop", "failed", 3, function="test_grad")
        for dtype in ("float32", "float64")
    ]
    after = TestResult(
        "no autograd",
        "manual_backprop",
        "passed",
        2,
        gated=True,
        marked_gated=True,
        counts_after=("test_grad",),
    )
    sizes = TestResult("sizes", "manual_backprop", "failed", 1, function="test_sizes")
    rule = result("manual_backprop", "passed", 1, static=True)
    warning = dataclasses.replace(rule, name="a warning", weight=0.0)
    _, scored = score_tests(
        ASSIGNMENT, [opener, *grads, after, rule, warning, sizes], sources={}, problems={}
    )
    waits = {t.name: t.waits_for for t in scored}
    assert waits["no autograd"] == "one of 'gradients [float32]'; 'gradients [float64]'"
    # The part's gate waits for every seeded function that has not passed (each named once).
    assert waits[rule.name] == "all of 'gradients [float64]'; 'sizes'"
    assert waits["a warning"] == ""  # worth nothing: nothing to wait for
    assert waits["loss"] == "" and not scored[0].waiting
    assert scored[3].outcome_text() == (
        "passed, not counted yet (waits for one of 'gradients [float32]'; 'gradients [float64]')"
    )
    # Once a gradient test passes, every pass counts and none waits.
    passing = dataclasses.replace(grads[0], outcome="passed")
    _, scored = score_tests(ASSIGNMENT, [opener, passing, after, rule], sources={}, problems={})
    assert [t.waits_for for t in scored] == ["", "", "", ""]
    assert all(t.score > 0 for t in scored)


def test_a_gated_pass_in_a_part_no_test_can_open_waits_for_any_opener() -> None:
    _, scored = score_tests(
        ASSIGNMENT, [result("autograd_loop", "passed", static=True)], sources={}, problems={}
    )
    assert scored[0].waits_for == WAITS_FOR_ANY_OPENER
    assert scored[0].outcome_text().startswith("passed, not counted yet (waits for a test")


def test_a_gated_metric_is_ranked_only_once_its_function_compared_right() -> None:
    """A held-out accuracy of weights no seeded comparison verified (a head copied in, not
    trained) neither scores nor reaches the leaderboard; once the training compares right,
    it does both."""
    entry = LeaderboardEntry("held-out accuracy", 0.97)
    training = TestResult(
        name="losses", part="two_layer_net", outcome="failed", weight=2, function="test_losses"
    )
    accuracy = TestResult(
        name="accuracy",
        part="two_layer_net",
        outcome="passed",
        weight=2,
        gated=True,
        counts_after=("test_losses",),
        function="test_accuracy",
        leaderboard=(entry,),
    )

    def result_of(tests: list[TestResult]) -> GradingResult:
        parts, scored = score_tests(ASSIGNMENT, tests, sources={}, problems={})
        submission = SubmissionInfo("", ())
        return GradingResult("pytorch_basics", 0, 100, parts, scored, 7, "cpu", submission, 0)

    assert result_of([training, accuracy]).leaderboard == ()
    passing = dataclasses.replace(training, outcome="passed")
    assert result_of([passing, accuracy]).leaderboard == (entry,)
