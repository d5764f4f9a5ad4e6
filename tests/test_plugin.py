"""Pieces of the hidden-suite plugin that need no grading run."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from grader import plugin
from grader.assignment import Assignment, parse_manifest
from grader.lying import HONEST, run_against
from grader.plugin import error_hint, holds_seed
from grader.seeds import HIDDEN_SEED_FLOOR, hidden_seed


def test_hidden_seeds_differ_per_test_and_run_and_avoid_public_seeds() -> None:
    seeds = {hidden_seed(run, f"test_{n}") for run in range(20) for n in range(50)}
    assert len(seeds) == 1000
    assert min(seeds) >= HIDDEN_SEED_FLOOR
    assert hidden_seed(7, "a") == hidden_seed(7, "a")


@pytest.mark.parametrize(
    ("message", "device", "expected"),
    [
        (
            "Expected all tensors to be on the same device, but found cuda:0 and cpu!",
            "cuda",
            "device=x.device",
        ),
        ("Torch not compiled with CUDA enabled", "cpu", "Never hard-code 'cuda'"),
        (
            "a leaf Variable that requires grad is being used in an in-place operation.",
            "cpu",
            "torch.no_grad()",
        ),
        ("expected scalar type Double but found Float", "cpu", "dtype=x.dtype"),
        ("mat1 and mat2 shapes cannot be multiplied (37x53 and 29x53)", "cpu", "transpose"),
    ],
)
def test_common_pytorch_errors_get_a_hint(message: str, device: str, expected: str) -> None:
    assert expected in error_hint(message, device)


def test_unknown_errors_get_no_hint() -> None:
    assert error_hint("ZeroDivisionError: division by zero", "cpu") == ""


# -- the gate: which tests may open it, judged from how they ran ------------------------------

TOY_REFERENCE = """
def double(x):
    return 2 * x
"""
TOY_PROBES = """
import torch


def doubled(part, *, seed):
    g = torch.Generator().manual_seed(seed)
    return {"y": part.double(torch.randn(4, generator=g))}


def doubled_ones(part, *, seed):
    return {"y": part.double(torch.ones(4))}


def doubled_configs(part, *, configs):
    return {"y": [part.double(torch.tensor(float(c))) for c in configs]}
"""
TOY_TESTS = """
import pytest
import torch

import {probes} as probes


@pytest.mark.points(1)
def test_seeded(compare, seed):
    '''seeded'''
    got, want = compare(probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_seed_inside_a_structure(compare, seed):
    '''seed inside a structure'''
    got, want = compare(probes.doubled_configs, configs=[seed, 3])
    torch.testing.assert_close(got, want)


@pytest.mark.points(1)
def test_seed_used_elsewhere(compare, seed):
    '''seed used elsewhere'''
    assert seed > 0
    got, want = compare(probes.doubled_configs, configs=[1, 2])
    torch.testing.assert_close(got, want)


@pytest.mark.points(1)
def test_one_compare_unseeded(compare, seed):
    '''one compare unseeded'''
    compare(probes.doubled, seed=seed)
    got, want = compare(probes.doubled_configs, configs=[1])
    torch.testing.assert_close(got, want)


@pytest.mark.points(1)
def test_student_only(student, seed):
    '''student only'''
    assert student(probes.doubled, seed=seed)["y"].shape == (4,)


@pytest.mark.self_reported
@pytest.mark.points(1)
def test_marked_self_reported(compare, seed):
    '''marked self_reported'''
    got, want = compare(probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_seed_ignored(compare, seed):
    '''seed ignored by the probe'''
    got, want = compare(probes.doubled_ones, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
"""
TOY_STUDENT_ONLY_TESTS = """
import pytest

import {probes} as probes


@pytest.mark.points(1)
def test_student_only(student, seed):
    '''student only'''
    assert student(probes.doubled, seed=seed)["y"].shape == (4,)
"""


def toy_course(root: Path, tests: dict[str, str]) -> Assignment:
    """A course under `root` with one part per entry of `tests` (part -> its hidden tests).

    Names are unique per call: the hidden suites run in this process, where pytest keeps
    every test and probe module it imported.
    """
    token = secrets.token_hex(4)
    parts = {f"{part}_{token}": source for part, source in tests.items()}
    manifest = root / "assignments" / "toy" / "assignment.toml"
    manifest.parent.mkdir(parents=True)
    entries = "".join(
        f'\n[[parts]]\nid = "{part}"\nfile = "{part}.py"\npoints = 10\n' for part in parts
    )
    manifest.write_text(f'[assignment]\nid = "toy"\nsolutions = "solutions/toy"\n{entries}')
    hidden = root / "solutions" / "toy" / "hidden_tests"
    hidden.mkdir(parents=True)
    probes = f"toy_probes_{token}"
    (hidden / f"{probes}.py").write_text(TOY_PROBES)
    for part, source in parts.items():
        (root / "solutions" / "toy" / f"{part}.py").write_text(TOY_REFERENCE)
        (hidden / f"test_{part}.py").write_text(source.replace("{probes}", probes))
    return parse_manifest(manifest)


def test_only_tests_that_compared_on_seeded_inputs_open_the_gate(tmp_path: Path) -> None:
    assignment = toy_course(tmp_path, {"toy": TOY_TESTS})
    records, broken = run_against(assignment, HONEST, device="cpu", grading_seed=7)
    assert not broken
    assert {t.name: t.outcome for t in records} == dict.fromkeys(
        (t.name for t in records), "passed"
    )
    assert {t.name: t.gated for t in records} == {
        "seeded": False,
        "seed inside a structure": False,
        "seed used elsewhere": True,
        "one compare unseeded": True,
        "student only": True,
        "marked self_reported": True,
        # Seeded as far as the plugin can see; tests/test_lying_student.py catches it.
        "seed ignored by the probe": False,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12345, True),
        ({"configs": [[1, 12345]]}, True),
        ({"a": (1, 2), "b": {12345: "key"}}, True),
        ({"seed": 12346, "n": 20}, False),
        ({"seed": "12345"}, False),
        ({"deep": [[[[[12345]]]]]}, False),
    ],
)
def test_the_seed_is_found_in_compare_arguments(value: object, expected: bool) -> None:
    assert holds_seed(value, 12345) is expected


# -- tests that read student source run in a bounded child ------------------------------------

TOY_SOURCE_TESTS = """
import ast

import pytest


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_source_obeys(student_source):
    '''obeys'''
    assert "double" in student_source


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_source_breaks_rule(student_source):
    '''breaks the rule'''
    found = [node.id for node in ast.walk(ast.parse(student_source)) if isinstance(node, ast.Name)]
    assert not found, "uses names: " + ", ".join(found)


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_source_fails_explicitly(student_source):
    '''fails explicitly'''
    pytest.fail("said so")


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_source_skips(student_source):
    '''skips'''
    pytest.skip("not today")


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_source_author_bug(student_source):
    '''author bug'''
    {}["missing"]
"""
TOY_ENDLESS_SOURCE_TESTS = """
import pytest


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_endless(student_source):
    '''endless'''
    while True:
        pass


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_after_endless(student_source):
    '''after endless'''
    assert student_source
"""
TOY_HUNGRY_SOURCE_TESTS = """
import pytest


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_hungry(student_source):
    '''hungry'''
    hoard = [student_source * 1000 for _ in range(1 << 20)]
    assert hoard
"""
TOY_MIXED_TESTS = """
import pytest

import {probes} as probes


@pytest.mark.points(1)
def test_source_and_compare(student_source, compare, seed):
    '''mixed'''
    compare(probes.doubled, seed=seed)
"""


def test_source_tests_report_their_verdicts_from_the_bounded_child(tmp_path: Path) -> None:
    assignment = toy_course(tmp_path, {"rules": TOY_SOURCE_TESTS})
    records, broken = run_against(assignment, HONEST, device="cpu", grading_seed=7)
    assert not broken
    by_name = {t.name: t for t in records}
    assert {name: t.outcome for name, t in by_name.items()} == {
        "obeys": "passed",
        "breaks the rule": "failed",
        "fails explicitly": "error",
        "skips": "skipped",
        "author bug": "error",
    }
    assert by_name["breaks the rule"].message == "uses names: x"
    assert "said so" in by_name["fails explicitly"].detail
    assert "not today" in by_name["skips"].message
    assert "KeyError: 'missing'" in by_name["author bug"].detail


def test_a_source_test_past_its_time_bound_costs_only_its_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plugin, "SOURCE_TEST_SECONDS", 0.5)
    assignment = toy_course(tmp_path, {"endless": TOY_ENDLESS_SOURCE_TESTS, "toy": TOY_TESTS})
    records, broken = run_against(assignment, HONEST, device="cpu", grading_seed=7)
    assert not broken
    by_name = {t.name: t for t in records}
    endless_part = by_name["endless"].part
    assert by_name["endless"].outcome == "error"
    assert by_name["endless"].message == (
        f"{endless_part}.py is too complex to check in 0.5 s; simplify it (split very long "
        "expressions, f-strings or literals)."
    )
    after = by_name["after endless"]
    assert after.outcome == "error"
    assert after.message.startswith(by_name["endless"].message)
    assert "not run" in after.message
    assert all(t.outcome == "passed" for t in records if t.part != endless_part)


def test_a_source_test_past_its_memory_bound_fails_with_a_student_sentence(
    tmp_path: Path,
) -> None:
    assignment = toy_course(tmp_path, {"hungry": TOY_HUNGRY_SOURCE_TESTS})
    records, broken = run_against(assignment, HONEST, device="cpu", grading_seed=7)
    assert not broken
    (record,) = records
    assert record.outcome == "error"
    assert "needs more than 1024 MiB of memory to check" in record.message


def test_a_test_may_not_both_read_source_and_run_student_code(tmp_path: Path) -> None:
    assignment = toy_course(tmp_path, {"mixed": TOY_MIXED_TESTS})
    _, broken = run_against(assignment, HONEST, device="cpu", grading_seed=7)
    assert "reads student_source" in broken
    assert "move compare to another test" in broken
