"""The hidden-suite plugin, tested in-process: no real sandbox, no grading run."""

from __future__ import annotations

import importlib.util
import math
import secrets
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# torch.testing.assert_close imports this on first use. Imported inside a pytester run, it
# leaves with pytester's module snapshot, and the next run's import registers torch's
# collective operators twice (a warning, an error under this suite's filterwarnings).
import torch.distributed.tensor  # noqa: F401

from grader.authoring.liars import HONEST, run_against
from grader.course.manifest import Assignment, Limits, parse_manifest
from grader.grading import session as grading_session
from grader.grading.gate import holds_seed
from grader.grading.grade import GradeSettings, grade_submission
from grader.grading.hints import error_hint
from grader.grading.plugin import GraderPlugin
from grader.grading.scoring import score_tests
from grader.grading.seeds import HIDDEN_SEED_FLOOR, hidden_seed
from grader.grading.session import GradingSession
from grader.grading.suites import TIMEOUTS_PER_PART
from grader.intake.submission import PreparedSubmission
from grader.results.model import TestResult
from grader.sandbox.client import PendingJob, Sandbox
from grader.sandbox.feedback import StudentFailure


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


def doubled_beside_its_answer(part, *, seed):
    # Forgeable: the expected answer is computed where the student's code runs.
    x = torch.randn(4, generator=torch.Generator().manual_seed(seed))
    return {"y": part.double(x), "expected": 2 * x}
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


# A part as a course wrote it before markers were needed: a seeded test and a check that only
# reads the student side, with no marker.
TOY_SEEDED_AND_UNMARKED_TESTS = """
import pytest
import torch

import {probes} as probes


@pytest.mark.points(1)
def test_seeded(compare, seed):
    '''seeded'''
    got, want = compare(probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_student_only(student, seed):
    '''student only'''
    assert student(probes.doubled, seed=seed)["y"].shape == (4,)
"""


@pytest.mark.slow
def test_a_reference_with_an_unmarked_student_only_test_grades_full_marks(
    tmp_path: Path,
) -> None:
    assignment = toy_course(tmp_path, {"mixed": TOY_SEEDED_AND_UNMARKED_TESTS})
    result = grade_submission(
        assignment.solutions_dir, assignment, GradeSettings(device="cpu", seed=3)
    )
    assert not result.grader_error
    assert [(t.name, t.outcome, t.score, t.max_score) for t in result.tests] == [
        ("seeded", "passed", 5.0, 5.0),
        ("student only", "passed", 5.0, 5.0),
    ]
    assert result.score == result.max_score == 10.0


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


# -- the plugin's rules, run in-process with pytester and a fake student side ----------------
#
# Each test writes a tiny course (a reference `double`, probes, hidden tests named after their
# part) into pytester's folder and runs it through `GraderPlugin`. The fake sandbox runs the
# student's module in this process: these are the tests' own toy modules, never submissions.

FAKE_REFERENCE = """
def double(x):
    return 2 * x


def triple(x):
    return 3 * x
"""
HONEST_STUDENT = FAKE_REFERENCE
WRONG_STUDENT = """
def double(x):
    return 3 * x
"""
FAKE_PROBES = """
import torch


def doubled(part, *, seed):
    g = torch.Generator().manual_seed(seed)
    return {"y": part.double(torch.randn(4, generator=g))}


def tripled(part, *, seed):
    g = torch.Generator().manual_seed(seed)
    return {"y": part.triple(torch.randn(4, generator=g))}


def doubled_ones(part):
    return {"y": part.double(torch.ones(4))}


def slow(part, *, seed):
    return {"y": part.double(torch.ones(4))}


def sleepy(part, *, seed):
    return {"y": part.double(torch.ones(4))}
"""
# Probes the fake student side answers with a timeout, as the sandbox does past the limit.
TIMING_OUT_PROBES = frozenset({"slow"})
# Probes whose student side takes this many seconds (a timeout where its job gets less).
SLEEPY_PROBES = {"sleepy": 0.2}


class FakeSandbox(Sandbox):
    """The student side: each job runs its probe on the student's module, in this process."""

    def __init__(self, student_dir: Path) -> None:
        # Nothing of the real sandbox is started: no server, no workdir, no uid.
        self.student_dir = student_dir
        self.jobs: list[tuple[str, str, dict[str, Any]]] = []
        self.started: list[PendingJob] = []
        self._pending: dict[int, tuple[Path, str, dict[str, Any]]] = {}
        self._modules: dict[Path, types.ModuleType] = {}

    def submit(
        self,
        *,
        module: str,
        probe_file: Path,
        probe: str,
        kwargs: dict[str, Any],
        timeout_s: float | None = None,
        import_student: bool = True,
    ) -> PendingJob:
        self.jobs.append((module if import_student else "", probe, kwargs))
        # As the real sandbox: the test's limit, or less where the part's budget has less left.
        limit = min(Limits().timeout_s, math.inf if timeout_s is None else timeout_s)
        job = PendingJob(
            id=len(self.jobs), module=module, job_dir=Path(), deadline=math.inf, timeout_s=limit
        )
        self._pending[job.id] = (probe_file, probe, kwargs)
        self.started.append(job)
        return job

    def result(self, job: PendingJob) -> Any:
        probe_file, probe, kwargs = self._pending.pop(job.id)
        if probe in TIMING_OUT_PROBES:
            raise StudentFailure("timeout", "Your code ran longer than the 1 s limit.")
        if probe in SLEEPY_PROBES:
            time.sleep(min(SLEEPY_PROBES[probe], job.timeout_s))
            if job.timeout_s < SLEEPY_PROBES[probe]:
                raise StudentFailure("timeout", f"Stopped after {job.timeout_s:g} s.")
        student = self._load(self.student_dir / f"{job.module}.py")
        return getattr(self._load(probe_file), probe)(student, **kwargs)

    def _load(self, path: Path) -> types.ModuleType:
        if path not in self._modules:
            spec = importlib.util.spec_from_file_location(f"_fake_student_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._modules[path] = module
        return self._modules[path]


@dataclass
class HiddenRun:
    """One in-process run of a hidden suite: what pytest saw, what the plugin recorded."""

    outcomes: pytest.HookRecorder
    records: list[TestResult]
    sandbox: FakeSandbox
    assignment: Assignment
    collection_errors: list[str]

    def scores(self) -> dict[str, float]:
        """Each part's score, through the grader's own scoring (the gate is applied there)."""
        parts, _ = score_tests(self.assignment, self.records, sources={}, problems={})
        return {part.id: part.score for part in parts}

    def by_name(self) -> dict[str, TestResult]:
        return {record.name: record for record in self.records}


def run_hidden(
    pytester: pytest.Pytester, students: dict[str, str], tests: dict[str, str], limits: str = ""
) -> HiddenRun:
    """Run `tests` (part -> its hidden test file) against `students` (part -> its code);
    `limits` is the body of the manifest's [limits] table."""
    root = pytester.path
    manifest = root / "assignments" / "fake" / "assignment.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        '[assignment]\nid = "fake"\nsolutions = "solutions/fake"\n'
        + f"[limits]\n{limits}\n"
        + "".join(f'\n[[parts]]\nid = "{p}"\nfile = "{p}.py"\npoints = 10\n' for p in tests)
    )
    solutions, student_dir = root / "solutions" / "fake", root / "student"
    solutions.mkdir(parents=True)
    student_dir.mkdir()
    for part in tests:
        (solutions / f"{part}.py").write_text(FAKE_REFERENCE)
        (student_dir / f"{part}.py").write_text(students.get(part, HONEST_STUDENT))
    pytester.makepyfile(fake_probes=FAKE_PROBES, **{f"test_{p}": s for p, s in tests.items()})
    assignment = parse_manifest(manifest)
    sandbox = FakeSandbox(student_dir)
    submission = PreparedSubmission(
        directory=student_dir,
        files={f"{part}.py": student_dir / f"{part}.py" for part in tests},
        sources=dict.fromkeys(tests, "file"),
        problems={},
        sha256="",
    )
    session = GradingSession(
        assignment, submission, sandbox, seed=7, device="cpu", limits=assignment.limits
    )
    plugin = GraderPlugin(session)
    # As grade.run_hidden_suite runs it: no conftest, no cache, only our plugin's fixtures.
    outcomes = pytester.inline_run(
        *(f"test_{part}.py" for part in tests), "--noconftest", "-p", "no:cacheprovider",
        plugins=[plugin],
    )  # fmt: skip
    return HiddenRun(outcomes, plugin.records, sandbox, assignment, plugin.collection_errors)


SEEDED_TEST = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_doubles(compare, seed):
    """Doubles a random vector"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
'''


def test_a_passing_comparison_with_the_reference_earns_its_points(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(
        pytester, {"wrong": WRONG_STUDENT}, {"right": SEEDED_TEST, "wrong": SEEDED_TEST}
    )
    run.outcomes.assertoutcome(passed=1, failed=1)
    assert [(r.part, r.outcome, r.gated) for r in run.records] == [
        ("right", "passed", False),
        ("wrong", "failed", False),
    ]
    assert run.scores() == {"right": 10.0, "wrong": 0.0}
    # The probe ran on the student's side with the test's hidden seed.
    assert [(module, probe) for module, probe, _ in run.sandbox.jobs] == [
        ("right", "doubled"),
        ("wrong", "doubled"),
    ]
    assert all(kwargs["seed"] >= HIDDEN_SEED_FLOOR for _, _, kwargs in run.sandbox.jobs)


GATED_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_doubles(compare, seed):
    """compared"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.self_reported
@pytest.mark.points(1)
def test_reports_its_own_verdict(compare, seed):
    """self-reported"""
    got, want = compare(fake_probes.doubled, seed=seed)
    assert got["y"].shape == want["y"].shape


@pytest.mark.static_rule
@pytest.mark.points(1)
def test_follows_a_source_rule(student_source):
    """static rule"""
    assert "import os" not in student_source
'''


def test_self_reported_and_static_points_count_only_once_a_compared_test_passed(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {"shut": WRONG_STUDENT}, {"open": GATED_TESTS, "shut": GATED_TESTS})
    outcomes = [(r.part, r.name, r.outcome, r.gated) for r in run.records]
    assert outcomes == [
        ("open", "compared", "passed", False),
        ("open", "self-reported", "passed", True),
        ("open", "static rule", "passed", True),
        ("shut", "compared", "failed", False),
        ("shut", "self-reported", "passed", True),
        ("shut", "static rule", "passed", True),
    ]
    # "shut" passed two of its three tests, but none that compared with the reference.
    assert run.scores() == {"open": 10.0, "shut": 0.0}


# A part of two functions: each one's self-reported check names the comparison of that
# function, so checks of the broken `triple` stay shut although `double` opens the part.
PER_FUNCTION_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_doubles(compare, seed):
    """doubles"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_triples(compare, seed):
    """triples"""
    got, want = compare(fake_probes.tripled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.self_reported
@pytest.mark.counts_after("test_doubles")
@pytest.mark.points(1)
def test_double_check(student, seed):
    """double's own check"""
    assert student(fake_probes.doubled, seed=seed)["y"].shape == (4,)


@pytest.mark.self_reported
@pytest.mark.counts_after("test_triples")
@pytest.mark.points(1)
def test_triple_check(student, seed):
    """triple's own check"""
    assert student(fake_probes.tripled, seed=seed)["y"].shape == (4,)
'''
TRIPLES_WRONG = """
def double(x):
    return 2 * x


def triple(x):
    return 4 * x
"""


def test_counts_after_gates_a_check_on_its_own_functions_comparison(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {"part": TRIPLES_WRONG}, {"part": PER_FUNCTION_TESTS})
    records = run.by_name()
    assert [(r.name, r.outcome, r.gated) for r in run.records] == [
        ("doubles", "passed", False),
        ("triples", "failed", False),
        ("double's own check", "passed", True),
        ("triple's own check", "passed", True),
    ]
    assert records["triple's own check"].counts_after == ("test_triples",)
    assert records["triples"].function == "test_triples"
    parts, scored = score_tests(run.assignment, run.records, sources={}, problems={})
    # doubles and double's check: 2 of 4 weights. Without counts_after the part gate, opened
    # by doubles, would let triple's forged check count too (7.5).
    assert parts[0].score == pytest.approx(5.0)
    triple_check = next(t for t in scored if t.name == "triple's own check")
    assert triple_check.score == 0 and triple_check.waits_for == "'triples'"


def test_counts_after_must_name_test_functions_of_the_module(pytester: pytest.Pytester) -> None:
    misnamed = PER_FUNCTION_TESTS.replace(
        'counts_after("test_triples")', 'counts_after("test_quadruples")'
    )
    run = run_hidden(pytester, {}, {"part": misnamed})
    assert run.outcomes.ret == pytest.ExitCode.USAGE_ERROR
    assert run.records == []
    assert len(run.collection_errors) == 1
    assert "test_triple_check" in run.collection_errors[0]
    assert "test_quadruples" in run.collection_errors[0]


UNSEEDED_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_constant_inputs(compare, seed):
    """constant inputs"""
    assert seed > 0
    got, want = compare(fake_probes.doubled_ones)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_one_compare_unseeded(compare, seed):
    """one compare unseeded"""
    compare(fake_probes.doubled, seed=seed)
    got, want = compare(fake_probes.doubled_ones)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_student_only(student, seed):
    """student only"""
    assert student(fake_probes.doubled, seed=seed)["y"].shape == (4,)


@pytest.mark.points(1)
def test_another_seed(compare, seed):
    """another seed"""
    got, want = compare(fake_probes.doubled, seed=seed + 1)
    torch.testing.assert_close(got["y"], want["y"])
'''


def test_a_test_that_did_not_compare_on_seeded_inputs_does_not_open_the_gate(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {}, {"unseeded": UNSEEDED_TESTS})
    run.outcomes.assertoutcome(passed=4)
    assert {r.name: r.gated for r in run.records} == {
        "constant inputs": True,
        "one compare unseeded": True,
        "student only": True,
        "another seed": True,
    }
    assert run.scores() == {"unseeded": 0.0}


# A check that only reads the student side and carries no marker, as a course writes it
# from the guide: graded as if it were marked self_reported.
UNMARKED_CHECK_TESTS = (
    SEEDED_TEST
    + '''

@pytest.mark.points(1)
def test_student_only_check(student, seed):
    """student-only check"""
    assert student(fake_probes.doubled, seed=seed)["y"].shape == (4,)
'''
)


def test_an_unmarked_student_only_check_counts_as_self_reported(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(
        pytester,
        {"wrong": WRONG_STUDENT},
        {"right": UNMARKED_CHECK_TESTS, "wrong": UNMARKED_CHECK_TESTS},
    )
    assert [(r.part, r.name, r.outcome, r.gated, r.self_reported_by_use) for r in run.records] == [
        ("right", "Doubles a random vector", "passed", False, False),
        ("right", "student-only check", "passed", True, True),
        ("wrong", "Doubles a random vector", "failed", False, False),
        ("wrong", "student-only check", "passed", True, True),
    ]
    # The part does not wait for its own check: the seeded test alone opens its gate...
    assert run.scores() == {"right": 10.0, "wrong": 0.0}
    # ...and where that test fails, the check waits for it, not for itself.
    _, scored = score_tests(run.assignment, run.records, sources={}, problems={})
    waiting = next(t for t in scored if t.part == "wrong" and t.name == "student-only check")
    assert waiting.waits_for == "'Doubles a random vector'"


# A test that asks for `compare` but stops before calling it is still one its part waits
# for: which tests those are must not depend on what the submission does.
STOPPED_BEFORE_COMPARE_TESTS = (
    SEEDED_TEST
    + '''

@pytest.mark.points(1)
def test_slow_then_compared(student, compare, seed):
    """slow, then compared"""
    student(fake_probes.slow, seed=seed)
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.self_reported
@pytest.mark.points(1)
def test_check(student, seed):
    """check"""
    assert student(fake_probes.doubled, seed=seed)["y"].shape == (4,)
'''
)


def test_a_test_stopped_before_its_comparison_is_still_waited_for(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {}, {"part": STOPPED_BEFORE_COMPARE_TESTS})
    records = run.by_name()
    assert records["slow, then compared"].outcome == "timeout"
    assert not records["slow, then compared"].never_opens_gate
    parts, scored = score_tests(run.assignment, run.records, sources={}, problems={})
    assert parts[0].score == pytest.approx(10 / 3)  # the seeded test only
    check = next(t for t in scored if t.name == "check")
    assert check.score == 0 and check.waits_for == "'slow, then compared'"


TIMING_OUT_TESTS = '''
import pytest

import fake_probes


@pytest.mark.parametrize("n", range(4))
@pytest.mark.points(1)
def test_slow(student, seed, n):
    """slow"""
    student(fake_probes.slow, seed=seed)
'''


def test_after_the_timeout_limit_a_part_s_remaining_tests_are_not_run(
    pytester: pytest.Pytester,
) -> None:
    run = run_hidden(pytester, {}, {"slow": TIMING_OUT_TESTS, "fast": SEEDED_TEST})
    assert [(r.part, r.outcome) for r in run.records] == [
        *[("slow", "timeout")] * 4,
        ("fast", "passed"),
    ]
    slow_jobs = [job for job in run.sandbox.jobs if job[0] == "slow"]
    assert len(slow_jobs) == TIMEOUTS_PER_PART
    not_run = [r for r in run.records if r.message.startswith("Not run")]
    assert len(not_run) == 4 - TIMEOUTS_PER_PART
    assert all(f"{TIMEOUTS_PER_PART} earlier tests" in r.message for r in not_run)
    assert run.scores() == {"slow": 0.0, "fast": 10.0}


SLEEPY_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.parametrize("n", range(5))
@pytest.mark.points(1)
def test_sleepy(compare, seed, n):
    """sleepy"""
    got, want = compare(fake_probes.sleepy, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
'''


def test_a_part_s_tests_share_a_time_budget(pytester: pytest.Pytester) -> None:
    # Each test takes 0.2 s; the part gets 0.5 s in all: two pass, the third gets the 0.1 s
    # left and is stopped, and the others are not run. Another part keeps its own budget.
    run = run_hidden(
        pytester, {}, {"sleepy": SLEEPY_TESTS, "fast": SEEDED_TEST}, limits="part_budget_s = 0.5"
    )
    sleepy = [r for r in run.records if r.part == "sleepy"]
    assert [r.outcome for r in sleepy] == ["passed", "passed", "timeout", "timeout", "timeout"]
    limits = [job.timeout_s for job in run.sandbox.started if job.module == "sleepy"]
    assert len(limits) == 3 and limits[0] == 0.5 and 0 < limits[2] <= 0.1 + 0.05
    assert "was stopped" in sleepy[2].message and "0.5 s they get together" in sleepy[2].message
    assert all("was not run" in r.message for r in sleepy[3:])
    assert run.scores() == {"sleepy": 4.0, "fast": 10.0}


NAMED_TESTS = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_with_a_docstring(compare, seed):
    """Doubles a random vector.

    Staff notes below the first line never reach students.
    """
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(1)
def test_without_a_docstring(compare, seed):
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.parametrize("scale", [1, 2], ids=["small", "large"])
@pytest.mark.points(1)
def test_cases(compare, seed, scale):
    """A case"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
'''


def test_a_test_is_named_by_its_docstring_s_first_line(pytester: pytest.Pytester) -> None:
    run = run_hidden(pytester, {}, {"names": NAMED_TESTS})
    assert [r.name for r in run.records] == [
        "Doubles a random vector.",
        "test_without_a_docstring",
        "A case [small]",
        "A case [large]",
    ]


WEIGHTED_CASES = '''
import pytest
import torch

import fake_probes


@pytest.mark.parametrize("case", range(3))
@pytest.mark.points(2)
def test_case(compare, seed, case):
    """case"""
    got, want = compare(fake_probes.doubled, seed=seed)
    if case == 2:
        got = {"y": got["y"] + 1}
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.points(4)
def test_whole(compare, seed):
    """whole"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])
'''


def test_each_parametrized_case_carries_the_marker_s_points(pytester: pytest.Pytester) -> None:
    run = run_hidden(pytester, {}, {"weighted": WEIGHTED_CASES})
    assert [(r.name, r.weight, r.outcome) for r in run.records] == [
        ("case [0]", 2.0, "passed"),
        ("case [1]", 2.0, "passed"),
        ("case [2]", 2.0, "failed"),
        ("whole", 4.0, "passed"),
    ]
    # Weights 2 + 2 + 2 + 4 share the part's 10 points; the failed case loses its 2.
    assert run.scores() == {"weighted": pytest.approx(8.0)}


def test_a_hidden_test_without_points_is_refused_at_collection(pytester: pytest.Pytester) -> None:
    unweighted = SEEDED_TEST.replace("@pytest.mark.points(1)\n", "")
    run = run_hidden(pytester, {}, {"unweighted": unweighted})
    assert run.records == []
    assert not run.sandbox.jobs
    assert run.outcomes.ret == pytest.ExitCode.USAGE_ERROR


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
    # 2 GiB at once: refused by the 1 GiB bound without touching a page, so even a loaded
    # machine cannot run into the time bound first.
    hoard = student_source + "x" * (1 << 31)
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
    monkeypatch.setattr(grading_session, "SOURCE_TEST_SECONDS", 0.5)
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


GPU_ONLY_COMPARISON = '''
import pytest
import torch

import fake_probes


@pytest.mark.points(1)
def test_doubles(compare, seed):
    """doubles"""
    got, want = compare(fake_probes.doubled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.cuda_only
@pytest.mark.points(1)
def test_triples_on_gpu(compare, seed):
    """triples on a GPU"""
    got, want = compare(fake_probes.tripled, seed=seed)
    torch.testing.assert_close(got["y"], want["y"])


@pytest.mark.self_reported
@pytest.mark.points(1)
def test_part_check(student, seed):
    """the part's own check"""
    assert student(fake_probes.doubled, seed=seed)["y"].shape == (4,)
'''


def test_a_check_of_the_part_does_not_wait_for_a_test_the_device_skips(
    pytester: pytest.Pytester,
) -> None:
    """On CPU a cuda_only comparison cannot run, so the part's checks do not wait for it."""
    run = run_hidden(pytester, {}, {"part": GPU_ONLY_COMPARISON})
    records = run.by_name()
    assert records["triples on a GPU"].outcome == "skipped"
    assert records["triples on a GPU"].skipped_for_device
    assert records["the part's own check"].gated
    assert run.scores() == {"part": pytest.approx(10.0)}


def test_a_check_of_the_part_waits_for_a_test_that_skipped_itself(
    pytester: pytest.Pytester,
) -> None:
    """A skip the test decides (here unconditional) is no reason to stop waiting for it."""
    self_skipping = GPU_ONLY_COMPARISON.replace("@pytest.mark.cuda_only\n", "").replace(
        '"""triples on a GPU"""', '"""triples on a GPU"""\n    pytest.skip("not today")'
    )
    run = run_hidden(pytester, {}, {"part": self_skipping})
    records = run.by_name()
    assert records["triples on a GPU"].outcome == "skipped"
    assert not records["triples on a GPU"].skipped_for_device
    # doubles alone (1 of the 2 weights that count): the check waits for triples.
    assert run.scores() == {"part": pytest.approx(5.0)}
