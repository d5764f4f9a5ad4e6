"""Record the public fixtures: each public test file's `@public_fixture`, run on the reference.

`build public` and `validate` both record into a scratch folder in a fresh interpreter (the
references and public test modules it imports never reach the caller's `sys.modules`, and a
runaway reference is stopped by the timeout), one thread, so every run computes the same
values. `build public` then replaces the committed files that differ beyond the grader's
tolerances; `validate` reports them.

Run as `python -m grader.authoring.fixtures ASSIGNMENT_DIR SOLUTIONS_DIR OUT PART_ID...`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from grader.course.manifest import Assignment
from grader.course.part_marker import part_of_module
from grader.course.root import PACKAGE_ROOT
from grader.errors import ConfigError
from grader.student.fixtures import RECORDER_ATTRIBUTE, PublicFixture

FIXTURES_FOLDER = "public_fixtures"
# The per-assignment script that wrote the fixtures before `build public` did.
FIXTURE_SCRIPT = "make_public_fixtures.py"
# Recording runs the references on small public inputs: seconds, bounded for a broken one.
RECORD_TIMEOUT_S = 300


def run_fresh_interpreter(
    arguments: list[str], *, cwd: Path, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """`python ARGUMENTS` in a fresh interpreter that records fixtures: no pytest settings of
    the caller's leak in, no bytecode lands beside the course's files, and this grader is
    importable. Raises subprocess.TimeoutExpired past `timeout_s`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def record_in_fresh_interpreter(assignment: Assignment, out: Path) -> None:
    """Write every part's recorded fixture into `out`, from a fresh interpreter."""
    arguments = [
        "-m",
        "grader.authoring.fixtures",
        str(assignment.directory),
        str(assignment.solutions_dir),
        str(out),
        *(part.id for part in assignment.parts),
    ]
    try:
        process = run_fresh_interpreter(arguments, cwd=out.parent, timeout_s=RECORD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{assignment.id}: recording the public fixtures took over {RECORD_TIMEOUT_S} s"
        ) from None
    if process.returncode != 0:
        lines = (process.stderr or process.stdout).strip().splitlines() or ["(no output)"]
        raise ConfigError(f"{assignment.id}: recording the public fixtures failed: {lines[-1]}")


def record(assignment_dir: Path, solutions_dir: Path, out: Path, part_ids: list[str]) -> None:
    """Run each public test file's @public_fixture on its part's reference (one per part)."""
    import torch

    from grader.course.manifest import parse_manifest

    # One thread: a multi-threaded float64 sum may add in another order from run to run.
    torch.set_num_threads(1)
    manifest = parse_manifest(assignment_dir / "assignment.toml")
    tests = assignment_dir / "public_tests"
    sys.path[:0] = [str(solutions_dir), str(tests)]  # sibling references; the tests' conftest
    out.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, tuple[Path, PublicFixture]] = {}
    for test_file in sorted(tests.glob("test_*.py")):
        module = _load(test_file, f"_public_{test_file.stem}")
        for value in list(vars(module).values()):
            fixture = getattr(value, RECORDER_ATTRIBUTE, None)
            if not isinstance(fixture, PublicFixture):
                continue
            part_id = fixture.part or part_of_module(module, test_file)
            if part_id in recorded:
                raise ConfigError(
                    f"{test_file.name}: a second @public_fixture of part {part_id!r} "
                    f"(the first is in {recorded[part_id][0].name}): one per part"
                )
            recorded[part_id] = (test_file, fixture)
    for part_id, (test_file, fixture) in recorded.items():
        if part_id not in part_ids:
            raise ConfigError(
                f"{test_file.name}: its @public_fixture names no part ({part_id!r}); name one "
                f"with @public_fixture(part=...) or pytestmark (parts: {', '.join(part_ids)})"
            )
        reference_file = solutions_dir / manifest.part(part_id).file
        reference = _load(reference_file, reference_file.stem)
        values = fixture.build(reference)
        path = out / f"{part_id}.pt"
        torch.save(values, path)
        try:
            torch.load(path, weights_only=True)
        except Exception as error:  # what weights_only refuses, it refuses with many types
            lines = str(error).splitlines()
            why = next((line.strip() for line in lines if "Unsupported global" in line), "")
            raise ConfigError(
                f"{test_file.name}: the @public_fixture returned what a weights-only load "
                f"refuses ({why or type(error).__name__}); return tensors, numbers, strings, "
                "lists and dicts"
            ) from None


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    assignment_dir, solutions_dir, out, *part_ids = argv
    try:
        record(Path(assignment_dir), Path(solutions_dir), Path(out), part_ids)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


def compare_fixture_folders(
    regenerated: Path, committed: Path, *, command: str = "python -m grader build public"
) -> list[str]:
    """One line per fixture file that is missing, extra, or differs beyond tolerance."""
    import torch

    new = {path.name for path in regenerated.glob("*.pt")}
    old = {path.name for path in committed.glob("*.pt")} if committed.is_dir() else set()
    problems = [
        f"{FIXTURES_FOLDER}/{name} is not committed: run `{command}`" for name in sorted(new - old)
    ]
    problems += [
        f"{FIXTURES_FOLDER}/{name} is no longer recorded: run `{command}`, which deletes it"
        for name in sorted(old - new)
    ]
    for name in sorted(new & old):
        got = torch.load(regenerated / name, weights_only=True)
        want = torch.load(committed / name, weights_only=True)
        difference = fixture_difference(got, want, name.removesuffix(".pt"))
        if difference:
            problems.append(
                f"{FIXTURES_FOLDER}/{name} differs from the reference's: {difference}; "
                f"run `{command}` and commit the result"
            )
    return problems


def fixture_file_differs(recorded: Path, committed: Path) -> bool:
    """Whether two fixture files differ beyond the grader's tolerances."""
    import torch

    got = torch.load(recorded, weights_only=True)
    want = torch.load(committed, weights_only=True)
    return bool(fixture_difference(got, want, committed.stem))


def fixture_difference(got: Any, want: Any, where: str) -> str:
    """Where two fixture values differ beyond the grader's tolerances, or '' if they do not."""
    import torch

    from grader.testing import TOLERANCES

    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{where} is {type(got).__name__}, expected a tensor"
        rtol, atol = TOLERANCES.get(want.dtype, (0.0, 0.0))
        try:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as error:
            return f"{where}: {str(error).splitlines()[0]}"
        return ""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"{where} has other keys"
        pairs = [(got[key], want[key], f"{where}[{key!r}]") for key in want]
        return next(filter(None, (fixture_difference(*pair) for pair in pairs)), "")
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            return f"{where} has another length"
        pairs = [(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(got, want, strict=True))]
        return next(filter(None, (fixture_difference(*pair) for pair in pairs)), "")
    if isinstance(want, float) and isinstance(got, float):
        rtol, atol = TOLERANCES[torch.float64]
        close = math.isclose(got, want, rel_tol=rtol, abs_tol=atol)
        if close or got == want or (math.isnan(got) and math.isnan(want)):
            return ""
        return f"{where}: {got} != {want}"
    return "" if got == want else f"{where}: {got!r} != {want!r}"
