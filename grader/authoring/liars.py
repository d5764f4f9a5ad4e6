"""Replay lying student sides against an assignment's hidden suites.

A test opens its part's gate (see `grader.grading.gate.opens_gate`) when it compared the student's
outputs with the reference's on inputs drawn from the hidden seed. Whether its assertions
really depend on those inputs is a property of the test the plugin cannot see, so it is
checked here: the real hidden suites run through the real plugin, but `Sandbox.result`
answers every job with a lie built on the trusted side from the reference. A gate-opening
test that passes against a lie would let a submission that implements nothing collect its
part's self-reported and static-rule points.

Course authors run this through assignment validation; tests/test_lying_student.py runs it
for every assignment.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.course.manifest import Assignment
from grader.grading.gate import SEED_SEARCH_DEPTH, holds_seed
from grader.grading.grade import run_hidden_suite
from grader.grading.plugin import GraderPlugin
from grader.grading.seeds import grading_seed, hidden_seed
from grader.grading.session import GradingSession
from grader.grading.suites import display_name
from grader.intake.submission import PreparedSubmission
from grader.results.model import TestResult
from grader.sandbox.client import PendingJob, Sandbox

# A seed a student can know: the public fixtures use seeds in this range.
PUBLIC_SEED = 0


@dataclass(frozen=True)
class Job:
    """One probe call, as the sandbox received it."""

    module: str
    probe_file: Path
    probe: str
    kwargs: dict[str, Any]
    # False for a job that judges data where no student code runs (the `judge` fixture):
    # there is no student side to lie, so it is answered honestly.
    import_student: bool = True


@dataclass(frozen=True)
class Answer:
    """The reference's honest output for an earlier job, kept for replaying."""

    probe: tuple[Path, str]
    kwargs: dict[str, Any]
    output: Any


class ReferenceRunner:
    """Runs probes against the reference modules, on the trusted side (course code only)."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self._modules: dict[Path, types.ModuleType] = {}

    def run(
        self, job: Job, kwargs: dict[str, Any], *, module: types.ModuleType | None = None
    ) -> Any:
        """The probe of `job` run on `kwargs` against `module` (the reference by default)."""
        if module is None:
            module = self._module(
                self.assignment.solutions_dir / f"{job.module}.py",
                f"_lying_reference_{self.assignment.id}_{job.module}",
            )
        probes = self._module(job.probe_file, f"_lying_probes_{self.assignment.id}")
        probe: Callable[..., Any] = getattr(probes, job.probe)
        return probe(module, **kwargs)

    def _module(self, path: Path, name: str) -> types.ModuleType:
        if path not in self._modules:
            spec = importlib.util.spec_from_file_location(f"{name}_{len(self._modules)}", path)
            if spec is None or spec.loader is None:
                raise FileNotFoundError(f"{path} cannot be imported")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._modules[path] = module
        return self._modules[path]


def replace_seed(value: Any, seed: int, other: int, depth: int = SEED_SEARCH_DEPTH) -> Any:
    """`value` with every occurrence of `seed` (searched as the plugin does) set to `other`."""
    if type(value) is int:
        return other if value == seed else value
    if depth <= 0:
        return value
    if isinstance(value, dict):
        return {
            replace_seed(k, seed, other, depth - 1): replace_seed(v, seed, other, depth - 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(replace_seed(v, seed, other, depth - 1) for v in value)
    return value


def zeroed(value: Any) -> Any:
    """`value` with every number and tensor element set to zero; flags and text kept."""
    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0 if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: zeroed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(zeroed(v) for v in value)
    return value


@dataclass(frozen=True)
class Lie:
    """A student side that answers every job without running the student's code."""

    name: str
    # Completes "passed against a student side that ...".
    description: str
    # (sandbox, job, the reference's honest output for it) -> what the student side returns.
    answer: Callable[[LyingSandbox, Job, Any], Any]
    # Whether it tests that an answer depends on the hidden seed (another seed's answers,
    # earlier ones replayed). A test that judges an artifact on seeded inputs where no
    # student code runs (`judge`) gets its seed there: an exported program is right for
    # every input, so the reference's program from another seed rightly passes.
    tests_seed_dependence: bool = False
    # What the author of a test that passed against it should do.
    advice: str = (
        "Assert on outputs that depend on the hidden seed (build the probe's inputs from "
        "`seed`), or mark the test self_reported."
    )


def _honest(sandbox: LyingSandbox, job: Job, honest: Any) -> Any:
    return honest


def _constants(sandbox: LyingSandbox, job: Job, honest: Any) -> Any:
    return zeroed(honest)


def _other_seed(sandbox: LyingSandbox, job: Job, honest: Any) -> Any:
    return sandbox.runner.run(job, replace_seed(job.kwargs, sandbox.test_seed, PUBLIC_SEED))


def _replayed(sandbox: LyingSandbox, job: Job, honest: Any) -> Any:
    key = (job.probe_file, job.probe)
    earlier = sandbox.answers
    same_probe = [a for a in earlier if a.probe == key and a.kwargs != job.kwargs]
    if same_probe:
        return same_probe[-1].output
    return earlier[-1].output if earlier else zeroed(honest)


class _DoesNothing(types.ModuleType):
    """A student module whose every name is a function that does nothing and returns None."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def _leaves(value: Any, depth: int = SEED_SEARCH_DEPTH + 4) -> list[Any]:
    """The tensors and floats anywhere in `value` (lists, tuples, dict values, a module's
    state)."""
    if isinstance(value, torch.Tensor):
        return [value.detach()]
    if isinstance(value, float) and math.isfinite(value):
        return [value]
    if depth <= 0:
        return []
    if isinstance(value, torch.nn.Module):
        value = value.state_dict()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item, depth - 1)]
    return []


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and bool(torch.allclose(a.detach().cpu(), b.detach().cpu(), equal_nan=True))
        )
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return False


def _taken_from(honest: Any, computed: list[Any], found: list[str], where: str = "") -> Any:
    """`honest` with each number and tensor replaced by an equal one from `computed`, or
    zeroed where there is none (flags and text kept, as `zeroed` keeps them). Where each
    replaced value sits in the output (`["losses"]`, `[0]`) is added to `found`."""
    if isinstance(honest, torch.Tensor | float) and not isinstance(honest, bool):
        match = next((leaf for leaf in computed if _same(leaf, honest)), None)
        if match is None:
            return zeroed(honest)
        found.append(where)
        return match
    if isinstance(honest, dict):
        return {k: _taken_from(v, computed, found, f"{where}[{k!r}]") for k, v in honest.items()}
    if isinstance(honest, list | tuple):
        return type(honest)(
            _taken_from(v, computed, found, f"{where}[{i}]") for i, v in enumerate(honest)
        )
    return zeroed(honest)


def _probe_computed(sandbox: LyingSandbox, job: Job, honest: Any) -> Any:
    """What a student who does nothing could report by rewriting the probe from a frame: the
    values the probe computes itself where the student's code runs (what each of its
    functions returned or held when it returned), put where the reference's answers go. A
    probe that computes the expected answer there (a run it trains itself, for the message)
    hands it to any student who finds it."""
    computed: list[Any] = []
    probe_file = str(job.probe_file)

    def record(frame: types.FrameType, event: str, value: Any) -> None:
        if event == "return" and frame.f_code.co_filename == probe_file:
            computed.append(value)
            computed.extend(frame.f_locals.values())

    sys.setprofile(record)
    try:
        sandbox.runner.run(job, job.kwargs, module=_DoesNothing("does_nothing"))
    except Exception:  # deliberate: what it computed before it failed is recorded
        pass
    finally:
        sys.setprofile(None)
    found: list[str] = []
    answer = _taken_from(honest, _leaves(computed), found)
    sandbox.probe_computed.setdefault(sandbox.test_name, set()).update(
        f"{job.probe}(){where}" for where in found
    )
    return answer


HONEST = Lie("honest", "returned the reference's own outputs", _honest)
LIES = (
    Lie("constants", "returned zeros shaped like the reference's outputs", _constants),
    Lie(
        "other-seed",
        f"returned the reference's outputs for seed {PUBLIC_SEED} instead of the hidden seed",
        _other_seed,
        tests_seed_dependence=True,
    ),
    Lie(
        "probe-computed",
        "implemented nothing and reported the values the probe computes itself where the "
        "student's code runs (a student can rewrite the probe from a frame to report them)",
        _probe_computed,
        advice=(
            "Compute the expected answer on the trusted side (the `reference` fixture), not "
            "in the probe after the student's call, which should only copy what the "
            "student's code returned (docs/writing-hidden-tests.md, Probes); and mark a check "
            "that a function doing nothing also passes (its inputs left unchanged) "
            "counts_after that function's seeded test."
        ),
    ),
    Lie(
        "replayed",
        "replayed the reference's outputs of an earlier call of the same probe (or of the "
        "previous call)",
        _replayed,
        tests_seed_dependence=True,
    ),
)


class LyingSandbox(Sandbox):
    """Stands in for the sandbox: no student process, every result is `lie`'s answer.

    `GradingSession` only submits jobs and collects their results, which is all this keeps.
    """

    def __init__(self, assignment: Assignment, lie: Lie) -> None:
        # No server, no workdir: nothing of the real sandbox is started.
        self.lie = lie
        self.runner = ReferenceRunner(assignment)
        self.test_seed = 0
        self._pending: dict[int, Job] = {}
        # The honest outputs of every earlier job, for replaying.
        self.answers: list[Answer] = []
        self.test_name = ""
        # Tests that judged data on inputs drawn from their hidden seed where no student code
        # runs (`judge`): their verdict depends on the seed there.
        self.judged_on_seeded_inputs: set[str] = set()
        # Per test, the outputs (`probe()["key"]`) the probe-computed lie took from values
        # the probe computed itself: what the author should stop computing there.
        self.probe_computed: dict[str, set[str]] = {}

    def begin_test(self, test_seed: int, name: str = "") -> None:
        self.test_seed = test_seed
        self.test_name = name

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
        job_id = len(self._pending) + len(self.answers)
        self._pending[job_id] = Job(module, probe_file, probe, kwargs, import_student)
        if not import_student and holds_seed(kwargs, self.test_seed):
            self.judged_on_seeded_inputs.add(self.test_name)
        return PendingJob(
            id=job_id, module=module, job_dir=Path(), deadline=math.inf, timeout_s=math.inf
        )

    def result(self, job: PendingJob) -> Any:
        call = self._pending.pop(job.id)
        honest = self.runner.run(call, call.kwargs)
        if not call.import_student:
            return honest
        answer = self.lie.answer(self, call, honest)
        self.answers.append(Answer((call.probe_file, call.probe), call.kwargs, honest))
        return answer


class LieObservingPlugin(GraderPlugin):
    """The grading plugin, telling the lying sandbox each test's hidden seed as it starts."""

    def __init__(self, session: GradingSession, sandbox: LyingSandbox) -> None:
        super().__init__(session)
        self.lying_sandbox = sandbox

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        seed = hidden_seed(self.session.seed, item.nodeid)
        self.lying_sandbox.begin_test(seed, display_name(item))


def run_against(
    assignment: Assignment, lie: Lie, *, device: str, grading_seed: int
) -> tuple[list[TestResult], str]:
    """The hidden suites' records against `lie`, and why the suite could not run (or "")."""
    records, broken, _ = _run_lying(assignment, lie, device=device, grading_seed=grading_seed)
    return records, broken


def _run_lying(
    assignment: Assignment, lie: Lie, *, device: str, grading_seed: int
) -> tuple[list[TestResult], str, LyingSandbox]:
    """`run_against`, and the lying sandbox it ran with (what it saw of each test)."""
    files = {part.file: assignment.solutions_dir / part.file for part in assignment.parts}
    submission = PreparedSubmission(
        directory=assignment.solutions_dir,
        files=files,
        sources={part.id: "file" for part in assignment.parts},
        problems={},
        sha256="",
    )
    sandbox = LyingSandbox(assignment, lie)
    session = GradingSession(
        assignment,
        submission,
        sandbox,
        seed=grading_seed,
        device=device,
        limits=assignment.limits,
    )
    plugin = LieObservingPlugin(session, sandbox)
    with tempfile.TemporaryDirectory(prefix="grader-lying-") as temporary:
        exit_code = run_hidden_suite(assignment.hidden_tests_dir, plugin, Path(temporary))
    if exit_code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return plugin.records, "", sandbox
    broken = "\n".join(plugin.collection_errors) or f"pytest exit code {exit_code}"
    return plugin.records, broken, sandbox


@dataclass(frozen=True)
class LiarFindings:
    """What `gate_openers_against_liars` found: problems to fix, and notes that need nothing."""

    problems: list[str]
    notes: list[str]


# The change that made a marker optional, as CHANGELOG.md names it.
SELF_REPORTED_BY_USE_CHANGE = "hidden tests are self-reported from how they ran"


def gate_openers_against_liars(assignment: Assignment, *, device: str = "cpu") -> LiarFindings:
    """Problems: a gate-opening test that passed against a lie, a part whose gate nothing
    opens even with the reference's own outputs (it could never score), or a test that asks
    for `compare` and never calls it. Notes: each unmarked test graded as self-reported."""
    seed = grading_seed()
    where = f"[grading seed {seed}, {device}]"
    problems: list[str] = []
    honest, broken = run_against(assignment, HONEST, device=device, grading_seed=seed)
    if broken:
        return LiarFindings([f"{where}: the hidden suite could not run: {broken}"], [])
    opened = {t.part for t in honest if t.outcome == "passed" and not t.gated}
    notes = [
        f"{where}: part {test.part}: {test.name!r} did not compare with the reference on "
        "seeded inputs, so it is graded as self_reported (it counts once its part's gate "
        "opens; its part does not wait for it). Nothing to change: since "
        f"'{SELF_REPORTED_BY_USE_CHANGE}' (CHANGELOG.md) no marker is needed; "
        "@pytest.mark.self_reported says it in the test."
        for test in honest
        if test.self_reported_by_use and test.outcome != "skipped"
    ]
    for test in honest:
        if test.gated and not test.never_opens_gate and test.outcome == "passed":
            problems.append(
                f"{where}: part {test.part}: {test.name!r} asks for `compare` but never "
                "called it, so it never opens the gate, and its part's checks that name no "
                "test (`counts_after`) would wait for it forever. Call `compare` with the "
                "`seed` fixture's value in its arguments, or drop its `compare` argument."
            )
    for part in assignment.parts:
        if part.id not in opened:
            problems.append(
                f"{where}: part {part.id}: no test compared with the reference on seeded "
                "inputs and passed with the reference's own outputs, so the part can never "
                "score. Call `compare` with the `seed` fixture's value in its arguments."
            )
    for lie in LIES:
        passed, broken, sandbox = _gate_openers_passing(assignment, lie, device, seed)
        graded_under = where
        if passed and lie.tests_seed_dependence:
            # Another seed's answers can pass by chance (a test whose outputs take few values):
            # what passes is confirmed under a second grading seed before it is reported.
            confirmation = grading_seed()
            again, broken, _ = _gate_openers_passing(assignment, lie, device, confirmation)
            passed_again = {test.name for test in again}
            passed = [test for test in passed if test.name in passed_again]
            graded_under = f"[grading seeds {seed} and {confirmation}, {device}]"
        if broken:
            problems.append(
                f"{graded_under}: the hidden suite could not run against a liar: {broken}"
            )
            continue
        for test in passed:
            forged = sorted(sandbox.probe_computed.get(test.name, ()))
            source = (
                f" It reported what the probe computed for {', '.join(forged)}." if forged else ""
            )
            problems.append(
                f"{graded_under}: part {test.part}: {test.name!r} opens the gate but passed "
                f"against a student side that {lie.description}.{source} {lie.advice}"
            )
    return LiarFindings(problems, notes)


def _gate_openers_passing(
    assignment: Assignment, lie: Lie, device: str, seed: int
) -> tuple[list[TestResult], str, LyingSandbox]:
    """The gate-opening tests that passed against `lie` (those judged on seeded inputs where
    no student code runs exempt from the seed lies), why the suite could not run, and the
    lying sandbox."""
    records, broken, sandbox = _run_lying(assignment, lie, device=device, grading_seed=seed)
    exempt = sandbox.judged_on_seeded_inputs if lie.tests_seed_dependence else set()
    passed = [
        test
        for test in records
        if test.outcome == "passed" and not test.gated and test.name not in exempt
    ]
    return passed, broken, sandbox
