"""report.json: the writer and the typed reader agree, and the reader refuses what is not one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult
from grader.results.report import ReportFormatError, read_report, report_dict, report_from_dict


def a_result() -> GradingResult:
    return GradingResult(
        assignment="pytorch_basics",
        score=12.5,
        max_score=30.0,
        parts=(
            PartResult("manual_backprop", "manual_backprop.py", 12.5, 20.0),
            PartResult("two_layer_net", "two_layer_net.py", 0.0, 10.0, "missing", "not found"),
        ),
        tests=(
            TestResult(
                "forward matches",
                "manual_backprop",
                "passed",
                weight=1.0,
                duration_s=0.25,
                score=12.5,
                max_score=12.5,
            ),
            TestResult(
                "backward matches",
                "manual_backprop",
                "failed",
                weight=1.0,
                message="grad_w1 differs",
                detail="Traceback ...",
                output="printed",
                max_score=7.5,
                cause="wrong answer",
                fingerprint="0123456789abcdef",
                visibility="visible",
            ),
            TestResult(
                "no autograd",
                "manual_backprop",
                "passed",
                weight=1.0,
                max_score=2.5,
                waits_for="'backward matches'",
            ),
        ),
        seed=42,
        device="cpu",
        submission=SubmissionInfo("abc", ("manual_backprop.py",), ("a note",)),
        duration_s=3.5,
        environment={"torch": "2.13.0"},
    )


def test_a_report_reads_back_as_the_result_it_was_written_from(tmp_path: Path) -> None:
    written = report_dict(a_result())
    path = tmp_path / "report.json"
    stamp = {"grader_version": "0.1.0", "solutions_sha256": "f00"}
    path.write_text(json.dumps({**written, **stamp}))
    report = read_report(path)
    assert report is not None
    assert report_dict(report.result) == written
    # Only a pass that waits for its gate carries `waits_for`.
    assert [t.get("waits_for") for t in written["tests"]] == [None, None, "'backward matches'"]
    assert [t.waiting for t in report.result.tests] == [False, False, True]
    assert report.stamp == stamp
    part = report.part("two_layer_net")
    assert part is not None and (part.source, part.problem) == ("missing", "not found")
    assert report.part("nonexistent") is None


def valid() -> dict[str, Any]:
    return report_dict(a_result())


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"score": "12"}, "score"),
        ({"seed": None}, "seed"),
        ({"parts": []}, "parts"),
        ({"tests": [{"name": "t", "part": "p", "outcome": "exploded"}]}, "outcome"),
        ({"tests": [{"part": "p", "outcome": "passed"}]}, "name"),
        ({"submission": {"sha256": "x", "files": [1]}}, "submission.files"),
        ({"grader_error": ["a list"]}, "grader_error"),
    ],
)
def test_a_malformed_report_names_what_is_wrong(
    change: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(ReportFormatError, match=named):
        report_from_dict({**valid(), **change})
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**valid(), **change}))
    assert read_report(path) is None


def test_what_is_not_a_report_reads_as_none(tmp_path: Path) -> None:
    assert read_report(tmp_path / "missing.json") is None
    for text in ("{not json", "[1, 2]", '"text"', "\xff"):
        path = tmp_path / "report.json"
        path.write_text(text, encoding="latin-1")
        assert read_report(path) is None, text


def test_strings_read_back_are_clean() -> None:
    data = valid()
    data["tests"][1]["message"] = "bad \ud800 and \x1b[31mred\x1b[0m"
    data["grader_error"] = "\u202eevil"
    result = report_from_dict(data).result
    assert "\ud800" not in result.tests[1].message and "\x1b" not in result.tests[1].message
    assert "\u202e" not in result.grader_error
    result.tests[1].message.encode("utf-8")
