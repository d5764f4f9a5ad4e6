"""Lying student sides against the hidden suites: no gate-opening test may pass against one.

A gate-opening test (see grader.grading.gate.opens_gate) lets a part's self-reported and
static-rule tests count. If one passes when the student side lies (constants, the
reference's outputs for another seed, earlier outputs replayed), a submission that
implements nothing collects those points.

The real assignments are checked by `python -m grader validate`, which `make test` runs for
every assignment before this suite (its lying-student check is this module's
`gate_openers_against_liars`); here, the liars themselves are tested on a toy course.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring.liars import LIES, Lie, gate_openers_against_liars, run_against
from tests.test_plugin import TOY_STUDENT_ONLY_TESTS, TOY_TESTS, toy_course


@pytest.mark.slow
def test_liars_find_a_gate_opener_whose_answer_ignores_the_seed(tmp_path: Path) -> None:
    assignment = toy_course(tmp_path, {"toy": TOY_TESTS, "reports": TOY_STUDENT_ONLY_TESTS})
    toy, reports = (part.id for part in assignment.parts)
    findings = gate_openers_against_liars(assignment)
    problems = findings.problems
    ignored = [line for line in problems if "'seed ignored by the probe'" in line]
    never = [line for line in problems if "can never score" in line]
    assert ignored and all(f"part {toy}:" in line for line in ignored), problems
    # A seed lie's finding is confirmed under a second grading seed before it is reported.
    assert any("[grading seeds " in line for line in ignored), ignored
    assert len(never) == 1 and f"part {reports}:" in never[0], problems
    assert sorted(ignored + never) == sorted(problems)
    # Tests that did not compare on seeded inputs and carry no marker: graded as
    # self_reported, which validate notes, naming the change that made the marker optional.
    names = sorted(line.split("'")[1] for line in findings.notes)
    assert names == ["one compare unseeded", "seed used elsewhere", "student only", "student only"]
    assert all("CHANGELOG.md" in line for line in findings.notes)


def test_a_test_that_asks_for_compare_and_never_calls_it_is_a_problem(tmp_path: Path) -> None:
    """Its part would wait for it forever: it cannot open the gate, but it may have."""
    unused_compare = TOY_STUDENT_ONLY_TESTS.replace("(student, seed)", "(student, compare, seed)")
    assignment = toy_course(tmp_path, {"toy": TOY_TESTS, "unused": unused_compare})
    problems = gate_openers_against_liars(assignment).problems
    unused = [line for line in problems if "never called it" in line]
    assert len(unused) == 1 and "'student only' asks for `compare`" in unused[0], problems


TOY_FORGEABLE_TESTS = """
import pytest
import torch

import {probes} as probes


@pytest.mark.points(1)
def test_answer_computed_beside_the_call(compare, seed):
    '''answer computed beside the call'''
    got, want = compare(probes.doubled_beside_its_answer, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_seeded(compare, seed):
    '''seeded'''
    got, want = compare(probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
"""


@pytest.mark.slow
def test_validate_finds_a_probe_that_computes_its_answer_where_student_code_runs(
    tmp_path: Path,
) -> None:
    """A student who rewrites such a probe from a frame reports the probe's own answer."""
    assignment = toy_course(tmp_path, {"forgeable": TOY_FORGEABLE_TESTS})
    problems = gate_openers_against_liars(assignment).problems
    assert len(problems) == 1, problems
    assert "'answer computed beside the call' opens the gate" in problems[0]
    assert "values the probe computes itself" in problems[0]
    assert "Compute the expected answer on the trusted side" in problems[0]
    # It names the output the probe computed itself, once, after the assignment's label.
    assert "what the probe computed for doubled_beside_its_answer()['expected'], " in problems[0]
    assert "doubled_beside_its_answer()['y']." in problems[0]
    assert problems[0].count(assignment.id) == 0


@pytest.mark.parametrize("lie", LIES, ids=[lie.name for lie in LIES])
def test_every_lie_fails_a_test_that_compares_on_seeded_inputs(tmp_path: Path, lie: Lie) -> None:
    assignment = toy_course(tmp_path, {"toy": TOY_TESTS})
    records, broken = run_against(assignment, lie, device="cpu", grading_seed=11)
    assert not broken
    outcomes = {test.name: test.outcome for test in records}
    assert outcomes["seeded"] != "passed"
    assert outcomes["seed inside a structure"] != "passed"
