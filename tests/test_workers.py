"""The grading workers' protocol: a result crosses it whole, and a malformed one is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from grader.course.manifest import load_assignment
from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult
from grader.workers.protocol import ProtocolError, WorkerConfig, decode_result, encode_result
from tests.support import COURSE_ROOT, SOLUTIONS_DIR, run_grader_cli


def a_result() -> GradingResult:
    """A result with every field set away from its default, as a real grade can set them."""
    gated = TestResult(
        name="test_backward[seed=3]",
        part="autograd_loop",
        outcome="passed",
        weight=0.25,
        message="passed, but\nsee the tolerance",
        duration_s=0.125,
        visibility="visible",
        gated=True,
        counts_after=("test_forward", "test_shapes"),
        marked_gated=True,
        skipped_for_device=True,
        function="test_backward",
        waits_for="'test_forward'",
        detail="Traceback ...",
        output="printed é\n",
        score=1.5,
        max_score=2.0,
        cause="wrong_values",
        fingerprint="ab12",
    )
    failed = TestResult(name="test_forward", part="autograd_loop", outcome="error", weight=1)
    return GradingResult(
        assignment="pytorch_basics",
        score=1.5,
        max_score=10,
        parts=(
            PartResult("autograd_loop", "autograd_loop.py", 1.5, 10.0, "notebook", "a problem"),
        ),
        tests=(gated, failed),
        seed=2**62 + 1,
        device="cpu",
        submission=SubmissionInfo("f" * 64, ("autograd_loop.py",), ("a note",)),
        duration_s=3.25,
        environment={"torch": "2.13.0", "sandbox": {"landlock": True}},
        grader_error="",
    )


def through_the_pipe(data: dict[str, Any]) -> object:
    """What the other end reads: one JSON line, decoded."""
    line = json.dumps({"event": "done", "key": "x", "result": data})
    assert "\n" not in line
    return json.loads(line)["result"]


def test_a_result_crosses_the_protocol_whole() -> None:
    result = a_result()
    assert decode_result(through_the_pipe(encode_result(result))) == result


def test_a_decoded_result_has_the_types_it_had() -> None:
    decoded = decode_result(through_the_pipe(encode_result(a_result())))
    assert isinstance(decoded.tests[0].counts_after, tuple)
    assert isinstance(decoded.max_score, float) and isinstance(decoded.seed, int)
    assert decoded.parts[0].file == "autograd_loop.py"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda data: data["tests"][0].update(outcome="won"), "the result.tests[0].outcome"),
        (lambda data: data["tests"][1].update(weight="1"), "the result.tests[1].weight"),
        (lambda data: data.update(seed=True), "the result.seed"),
        (lambda data: data["parts"][0].pop("file"), "the result.parts[0]"),
        (lambda data: data["submission"].update(files="x.py"), "the result.submission.files"),
        (lambda data: data.update(extra=1), "the result has other fields"),
    ],
)
def test_a_malformed_result_is_refused_naming_the_field(change: Any, named: str) -> None:
    data = encode_result(a_result())
    change(data)
    with pytest.raises(ProtocolError, match=named.replace("[", r"\[").replace("]", r"\]")):
        decode_result(through_the_pipe(data))


def test_the_config_carries_the_course_folder() -> None:
    assignment = load_assignment("pytorch_basics", root=COURSE_ROOT / "assignments")
    config = WorkerConfig.for_assignment(assignment, device="cpu", seed=7, hide=("/out",))
    assert config.course == str(COURSE_ROOT)
    assert WorkerConfig.from_json(config.to_json()) == config


@pytest.mark.slow
def test_grade_inside_another_course_grades_with_that_course(tmp_path: Path) -> None:
    # The worker loads the assignment from the course its config names, not from wherever
    # its own working folder (the grader's checkout) would lead it.
    course = tmp_path / "course"
    for folder in ("assignments", "solutions"):
        shutil.copytree(COURSE_ROOT / folder / "pytorch_basics", course / folder / "pytorch_basics")
    manifest = course / "assignments" / "pytorch_basics" / "assignment.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace("points = 20", "points = 40", 1))
    report = tmp_path / "report.json"
    graded = run_grader_cli("grade", SOLUTIONS_DIR, "--report", report, cwd=course)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    data = json.loads(report.read_text())
    assert data["max_score"] == data["score"] == 120
