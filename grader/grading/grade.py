"""Grade one submission: prepare it, run the hidden suites against the sandbox, score."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import platform
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grader
from grader.course.lock import graded_package_versions
from grader.course.manifest import Assignment
from grader.errors import ConfigError, SubmissionError
from grader.grading.devices import resolve_device
from grader.grading.refcache import ReferenceCache
from grader.grading.scoring import score_tests
from grader.grading.seeds import grading_seed
from grader.intake.submission import PreparedSubmission, prepare_submission
from grader.notebook import (
    MAX_ORIGIN_CHARS,
    NotebookOrigin,
    explain_missing_names,
    point_at_cells,
    read_origin,
)
from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult
from grader.sandbox.client import Sandbox
from grader.sandbox.numerics import GRADING_THREADS, use_grading_numerics
from grader.sandbox.scratch import scratch_folder
from grader.sandbox.settings import CUBLAS_WORKSPACE, SandboxSettings, limits_from_environment

if TYPE_CHECKING:
    from grader.grading.plugin import GraderPlugin

log = logging.getLogger(__name__)

PROVISIONAL_MESSAGE = "Grading did not finish (the grader was stopped or ran out of memory)."


@dataclass(frozen=True)
class GradeSettings:
    device: str = "auto"
    seed: int | None = None
    # Intra-op threads for both sides.
    threads: int = GRADING_THREADS
    # Extra paths student code must not see (results folders, Gradescope metadata).
    hide: tuple[Path, ...] = ()
    keep_jobs: bool = False


def environment(
    device: str, protections: dict[str, Any], assignment: Assignment | None = None
) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "grader": grader.__version__,
        "platform": platform.platform(),
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "deterministic_algorithms": True,
        "sandbox": protections,
    }
    if assignment is not None:
        info["packages"] = graded_package_versions(assignment)
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    return info


def configure_trusted_process(threads: int) -> None:
    """Match the sandbox's numerics (threads, TF32 off, deterministic algorithms) and pay
    torch's lazy imports now.

    Called while the sandbox server starts, so both processes import in parallel; the first
    optimizer step imports torch._dynamo, which would otherwise land in a test's time.
    """
    import torch

    # Deterministic kernels where torch has them, so a seed gives the same training run after
    # run (validate's metric figures, a regrade with --seed); an op without one only warns.
    os.environ.setdefault(*CUBLAS_WORKSPACE)
    use_grading_numerics(torch, threads)
    weight = torch.nn.Parameter(torch.ones(1))
    # A gradient set by hand, not by a backward pass: where torch sees a GPU, the first
    # backward starts autograd's device threads, and no process forked after that (the
    # sandbox's zygote, forked from this one) can run autograd again.
    weight.grad = torch.ones_like(weight)
    torch.optim.SGD([weight], lr=0.1).step()
    # Exempt what is loaded by now (torch, pytest) from garbage collection: every collection
    # during grading then walks only what grading itself creates. (A worker turned
    # collections off for its start-up: they are on again from here.)
    gc.collect()
    gc.freeze()
    gc.enable()


@contextlib.contextmanager
def _isolated_pytest_environment(bytecode_dir: Path | None) -> Iterator[None]:
    """No third-party pytest plugins, and no bytecode written into solutions/.

    With `bytecode_dir`, every module this run compiles (the hidden tests with pytest's
    assertion rewriting among them) keeps its bytecode there instead, for the next run.
    """
    saved_autoload = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    saved_bytecode = sys.dont_write_bytecode, sys.pycache_prefix
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.dont_write_bytecode = bytecode_dir is None
    if bytecode_dir is not None:
        sys.pycache_prefix = str(bytecode_dir)
    try:
        yield
    finally:
        sys.dont_write_bytecode, sys.pycache_prefix = saved_bytecode
        if saved_autoload is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved_autoload


@contextlib.contextmanager
def modules_of(*folders: Path) -> Iterator[None]:
    """Import the modules of `folders` afresh and forget them afterwards.

    Hidden suites run in this process under the same module names (`probes`, `test_<part>`)
    for every assignment and every copy of one: a module of that name left in sys.modules
    by an earlier run would be used instead of this folder's own.
    """
    roots = [folder.resolve() for folder in folders]

    def loaded_from_roots(module: object) -> bool:
        file = getattr(module, "__file__", None)
        return bool(file) and any(Path(str(file)).resolve().is_relative_to(r) for r in roots)

    own_names = {path.stem for root in roots for path in root.glob("*.py")}
    for name in own_names & set(sys.modules):
        del sys.modules[name]
    # Only modules imported meanwhile can come from `folders`: resolving the paths of all
    # of torch's ten thousand modules cost half a CPU second a grade.
    before = set(sys.modules)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if loaded_from_roots(sys.modules[name]):
                del sys.modules[name]


def run_hidden_suite(
    tests_dir: Path, plugin: GraderPlugin, workdir: Path, *, bytecode_dir: Path | None = None
) -> int:
    """Run the hidden suite in this (trusted) process with only our plugin's fixtures.

    A process that runs the suite again and again (a batch worker) passes a private
    `bytecode_dir`: pytest then rewrites and compiles the test modules once, not per run.
    """
    # pytest and the plugin are imported where a suite runs: `grade`'s own process leaves
    # that to its worker, and they were half of that process's start-up (0.2 of 0.4 CPU-s).
    import pytest

    if not tests_dir.is_dir():
        raise ConfigError(
            f"hidden tests not found at {tests_dir}: grading needs the private solutions/ "
            "folder (students: use `python -m grader check`)."
        )
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    args = [
        str(tests_dir),
        "-c", str(ini),
        "--rootdir", str(tests_dir),
        "--noconftest",
        "-p", "no:cacheprovider",
        "-p", "no:terminal",
        # Log capture re-attaches handlers for every phase of every test, and
        # no report shows captured logs: the grader's own warnings go to its stderr instead.
        "-p", "no:logging",
        "-o", "python_files=test_*.py",
        "-W", "ignore::DeprecationWarning",
    ]  # fmt: skip
    with _isolated_pytest_environment(bytecode_dir), modules_of(tests_dir):
        return int(pytest.main(args, plugins=[plugin]))


def sandbox_settings(
    assignment: Assignment, settings: GradeSettings, device: str
) -> SandboxSettings:
    return SandboxSettings(
        limits=limits_from_environment(assignment.limits),
        device=device,
        threads=settings.threads,
        # All of solutions/, not only this assignment's: other references are secret too.
        hide=(_solutions_root(assignment), *settings.hide),
        keep_jobs=settings.keep_jobs,
    )


def _solutions_root(assignment: Assignment) -> Path:
    parent = assignment.solutions_dir.parent
    return parent if parent.name == "solutions" else assignment.solutions_dir


def grade_submission(
    path: Path,
    assignment: Assignment,
    settings: GradeSettings,
    *,
    sandbox: Sandbox | None = None,
    reference_cache: ReferenceCache | None = None,
    bytecode_dir: Path | None = None,
) -> GradingResult:
    """Grade `path`; always returns a result, with `grader_error` set if the grader failed.

    A started `sandbox` built from `sandbox_settings(...)` is reused and left running (batch
    workers grade many submissions with one warm fork server); without one, a fresh one is
    started and closed here. `bytecode_dir`: see `run_hidden_suite`.
    """
    import pytest

    from grader.grading.plugin import GraderPlugin
    from grader.grading.session import GradingSession

    started = time.monotonic()
    seed = grading_seed(settings.seed)
    device = resolve_device(settings.device)
    with scratch_folder("grader-") as workdir:
        owned = sandbox is None
        if sandbox is None:
            sandbox = Sandbox(
                sandbox_settings(assignment, settings, device), {}, workdir / "sandbox"
            )
        grader_error = ""
        records: list[TestResult] = []
        submission: PreparedSubmission | None = None
        origins: dict[str, NotebookOrigin] = {}
        try:
            try:
                submission = prepare_submission(path, assignment, workdir / "submission")
            except SubmissionError as error:
                return _unreadable_submission(assignment, str(error), seed, device, started)
            origins = notebook_origins(assignment, submission)
            submission = _with_notebook_problems(assignment, submission, origins)
            if owned:
                # The server imports torch while this process does the same just below.
                sandbox.launch()
            configure_trusted_process(settings.threads)
            sandbox.use_submission(submission.files, submission.imports)
            session = GradingSession(
                assignment,
                submission,
                sandbox,
                seed=seed,
                device=device,
                limits=sandbox.settings.limits,
                reference_cache=reference_cache,
            )
            plugin = GraderPlugin(session)
            try:
                exit_code = run_hidden_suite(
                    assignment.hidden_tests_dir, plugin, workdir, bytecode_dir=bytecode_dir
                )
            finally:
                records = plugin.records
            if exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                details = "\n".join(plugin.collection_errors) or f"pytest exit code {exit_code}"
                grader_error = f"The hidden test suite could not run: {details}"
            elif plugin.environment_errors:
                grader_error = "\n".join(plugin.environment_errors)
        except Exception as error:  # the grader's own failure: keep what we have, say so
            log.exception("grading failed")
            grader_error = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        finally:
            if owned:
                sandbox.close()
        protections = sandbox.protections
    if submission is None:
        return crashed_result(assignment, grader_error, seed=seed, device=device)
    return _assemble(
        assignment,
        submission,
        records,
        seed=seed,
        device=device,
        started=started,
        protections=protections,
        grader_error=grader_error,
        origins=origins,
    )


def notebook_origins(
    assignment: Assignment, submission: PreparedSubmission
) -> dict[str, NotebookOrigin]:
    """File name -> what the grader wrote in the header of each part file built from cells."""
    origins: dict[str, NotebookOrigin] = {}
    for part in assignment.parts:
        path = submission.files.get(part.file)
        if submission.sources.get(part.id) != "notebook" or path is None:
            continue
        try:
            with path.open(encoding="utf-8") as handle:
                head = handle.readline(MAX_ORIGIN_CHARS) + handle.readline(MAX_ORIGIN_CHARS)
        except (OSError, UnicodeDecodeError):
            continue
        origin = read_origin(head)
        if origin is not None:
            origins[part.file] = origin
    return origins


def _with_notebook_problems(
    assignment: Assignment, submission: PreparedSubmission, origins: dict[str, NotebookOrigin]
) -> PreparedSubmission:
    """A part whose notebook cell cannot be graded is not run; its problem says why."""
    problems = {
        part.id: origins[part.file].problem
        for part in assignment.parts
        if part.file in origins and origins[part.file].problem
    }
    if not problems:
        return submission
    return dataclasses.replace(submission, problems={**submission.problems, **problems})


def _point_at_notebook(
    test: TestResult, origins: dict[str, NotebookOrigin], own_file: str
) -> TestResult:
    """A test's feedback about lines of files built from the notebook, said in cells."""
    message = point_at_cells(test.message, origins, own_file)
    if own_file in origins:
        message = explain_missing_names(message, origins[own_file])
    detail = point_at_cells(test.detail, origins)
    if message == test.message and detail == test.detail:
        return test
    return dataclasses.replace(test, message=message, detail=detail)


def _assemble(
    assignment: Assignment,
    submission: PreparedSubmission,
    records: list[TestResult],
    *,
    seed: int,
    device: str,
    started: float,
    protections: dict[str, Any],
    grader_error: str,
    origins: dict[str, NotebookOrigin],
) -> GradingResult:
    problems = submission.problems
    if origins:
        files = {part.id: part.file for part in assignment.parts}
        records = [_point_at_notebook(test, origins, files[test.part]) for test in records]
        problems = {
            part_id: point_at_cells(problem, origins, files[part_id])
            for part_id, problem in problems.items()
        }
    parts, tests = score_tests(
        assignment,
        records,
        sources=submission.sources,
        problems=problems,
        unverifiable=submission.unverifiable,
    )
    return GradingResult(
        assignment=assignment.id,
        score=round(sum(p.score for p in parts), 6),
        max_score=assignment.max_score,
        parts=parts,
        tests=tests,
        seed=seed,
        device=device,
        submission=SubmissionInfo(
            sha256=submission.sha256,
            files=tuple(sorted(submission.files)),
            notes=submission.notes,
        ),
        duration_s=round(time.monotonic() - started, 3),
        environment=environment(device, protections, assignment),
        grader_error=grader_error,
    )


def _unreadable_submission(
    assignment: Assignment, message: str, seed: int, device: str, started: float
) -> GradingResult:
    """A submission we cannot open scores 0 everywhere, with one visible test saying why."""
    zero = crashed_result(assignment, "", seed=seed, device=device)
    notice = TestResult(
        name="Submission could not be read",
        part=assignment.parts[0].id,
        outcome="error",
        weight=0.0,
        message=message,
        visibility="visible",
    )
    return dataclasses.replace(
        zero,
        parts=tuple(dataclasses.replace(part, problem=message) for part in zero.parts),
        tests=(notice,),
        duration_s=round(time.monotonic() - started, 3),
        environment=environment(device, {}, assignment),
    )


def crashed_result(
    assignment: Assignment, message: str, *, seed: int, device: str
) -> GradingResult:
    """The result written when grading did not finish (also the provisional results.json)."""
    parts = tuple(
        PartResult(id=p.id, file=p.file, score=0.0, max_score=p.points, source="missing")
        for p in assignment.parts
    )
    return GradingResult(
        assignment=assignment.id,
        score=0.0,
        max_score=assignment.max_score,
        parts=parts,
        tests=(),
        seed=seed,
        device=device,
        submission=SubmissionInfo(sha256="", files=()),
        duration_s=0.0,
        environment={"python": platform.python_version(), "grader": grader.__version__},
        grader_error=message,
    )


def provisional_result(assignment: Assignment, *, seed: int, device: str) -> GradingResult:
    """What the results files say from the start of grading until its real result replaces it.

    Written before any student code runs, so a grader that is killed (out of memory, a
    platform's time limit) still leaves a valid file that says why there are no scores.
    """
    return crashed_result(assignment, PROVISIONAL_MESSAGE, seed=seed, device=device)
