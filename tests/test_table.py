"""The terminal table of `grade`: what counts is counted, and a waiting pass is shown apart."""

from __future__ import annotations

import io

from rich.console import Console

from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult, points
from grader.results.table import print_result


def test_a_pass_that_waits_for_its_gate_is_counted_apart_and_shown() -> None:
    tests = (
        TestResult("loss", "manual_backprop", "passed", 1.0, score=10.0, max_score=10.0),
        TestResult("gradients", "manual_backprop", "failed", 1.0, message="differs", max_score=5),
        TestResult(
            "no autograd",
            "manual_backprop",
            "passed",
            1.0,
            message="(This check counts once ...)",
            max_score=5.0,
            waits_for="'gradients'",
        ),
        TestResult("forward", "two_layer_net", "passed", 1.0, score=20.0, max_score=20.0),
    )
    result = GradingResult(
        assignment="pytorch_basics",
        score=30.0,
        max_score=40.0,
        parts=(
            PartResult("manual_backprop", "manual_backprop.py", 10.0, 20.0),
            PartResult("two_layer_net", "two_layer_net.py", 20.0, 20.0),
        ),
        tests=tests,
        seed=1,
        device="cpu",
        duration_s=1.0,
        submission=SubmissionInfo(sha256="", files=()),
    )
    console = Console(file=io.StringIO(), width=200)
    print_result(result, console)
    lines = [line.strip(" │┃") for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert any(line.startswith("manual_backprop │ 1/3 (+1 not counted yet)") for line in lines)
    assert any(line.startswith("two_layer_net") and " 1/1 " in line for line in lines)
    shown = [line for line in lines if "_" in line and "·" in line]
    # Passes are hidden (no --show-passed), but not a pass that earns nothing yet.
    assert shown == [
        "FAILED   manual_backprop · gradients  (0/5)",
        "PASSED   manual_backprop · no autograd  (0/5)",
    ]
    assert "passed, not counted yet (waits for 'gradients')" in lines


def test_points_read_with_two_decimals_at_most() -> None:
    # A part of 30 points over 7 tests weighs 4.285714... a test; people read 4.29.
    values = (30 / 7, 1.5, 10.0, 0.0, 2 / 3)
    assert [points(v) for v in values] == ["4.29", "1.5", "10", "0", "0.67"]
