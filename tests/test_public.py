"""`build public`: stubs and public fixtures from the references, end to end, and `validate`'s
checks that the committed ones are what the references give (grader/authoring/public.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from grader.authoring.public import stub_problems
from grader.authoring.validate import fixture_problems
from grader.cli import main
from grader.course.manifest import load_assignment
from grader.student.check import check_command
from tests.support import COURSE_ROOT

ASSIGNMENT = "pytorch_losses"
COMMAND = f"python -m grader build public -a {ASSIGNMENT}"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course holding a copy of pytorch_losses, formatted at the project's line length."""
    root = tmp_path / "course"
    for tree in ("assignments", "solutions"):
        shutil.copytree(
            COURSE_ROOT / tree / ASSIGNMENT,
            root / tree / ASSIGNMENT,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    (root / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n", encoding="utf-8")
    return root


def build_public(course: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["build", "public", "-a", ASSIGNMENT, "--course", str(course)]) == 0
    return capsys.readouterr().out


def test_build_public_writes_what_changed_and_nothing_else(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assignment_dir = course / "assignments" / ASSIGNMENT
    reference = course / "solutions" / ASSIGNMENT / "mse.py"
    reference.write_text(
        reference.read_text(encoding="utf-8").replace(
            "# BEGIN SOLUTION: average (pred - target) ** 2 over every element",
            "# BEGIN SOLUTION: divide the summed squares by pred.numel()",
        ),
        encoding="utf-8",
    )
    (assignment_dir / "public_fixtures" / "cross_entropy.pt").unlink()
    torch.save({"old": torch.zeros(1)}, assignment_dir / "public_fixtures" / "dropped.pt")

    out = build_public(course, capsys)

    assert f"wrote {assignment_dir / 'mse.py'}" in out
    assert f"wrote {assignment_dir / 'public_fixtures' / 'cross_entropy.pt'}" in out
    assert f"deleted {assignment_dir / 'public_fixtures' / 'dropped.pt'}" in out
    assert "cross_entropy.py" not in out and "mse.pt" not in out
    stub = (assignment_dir / "mse.py").read_text(encoding="utf-8")
    assert stub.endswith(
        '    raise NotImplementedError("mse_loss: divide the summed squares by pred.numel()")\n'
    )
    assert "diff" not in stub
    recorded = torch.load(
        assignment_dir / "public_fixtures" / "cross_entropy.pt", weights_only=True
    )
    assert set(recorded) >= {"logits", "labels", "loss", "grad", "large_loss"}
    assert build_public(course, capsys).strip() == "the stubs and public fixtures were up to date"

    # What check runs reads the recorded values: the reference passes, the stubs fail.
    assert check_command(course / "solutions" / ASSIGNMENT, ASSIGNMENT).passed
    assert not check_command(assignment_dir, ASSIGNMENT).passed


def test_validate_names_a_stale_stub_and_fixture_with_the_command(course: Path) -> None:
    assignment = load_assignment(ASSIGNMENT, root=course / "assignments")
    assert stub_problems(assignment) == [] and fixture_problems(assignment) == []

    stub = assignment.directory / "cross_entropy.py"
    stub.write_text(stub.read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    fixture = assignment.directory / "public_fixtures" / "mse.pt"
    values = torch.load(fixture, weights_only=True)
    values["loss"] = values["loss"] + 1e-3
    torch.save(values, fixture)

    assert stub_problems(assignment) == [
        f"assignments/{ASSIGNMENT}/cross_entropy.py is not what its reference generates: run "
        f"`{COMMAND}` and commit the result"
    ]
    [problem] = fixture_problems(assignment)
    assert problem.startswith("public_fixtures/mse.pt differs from the reference's: mse['loss']")
    assert problem.endswith(f"run `{COMMAND}` and commit the result")


def test_a_reference_without_markers_is_refused_naming_it(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = course / "solutions" / ASSIGNMENT / "mse.py"
    reference.write_text(
        "def mse_loss(pred, target):\n    return ((pred - target) ** 2).mean()\n", encoding="utf-8"
    )
    stub_before = (course / "assignments" / ASSIGNMENT / "mse.py").read_bytes()

    assert main(["build", "public", "-a", ASSIGNMENT, "--course", str(course)]) == 2

    error = capsys.readouterr().err
    assert f"solutions/{ASSIGNMENT}/mse.py marks no solution" in error
    assert "# BEGIN SOLUTION" in error
    assert (course / "assignments" / ASSIGNMENT / "mse.py").read_bytes() == stub_before


def test_a_fixture_that_a_weights_only_load_refuses_is_named(course: Path) -> None:
    test_file = course / "assignments" / ASSIGNMENT / "public_tests" / "test_mse.py"
    source = test_file.read_text(encoding="utf-8")
    test_file.write_text(
        source.replace(
            'return {"pred": pred, "target": target, "loss": loss, "grad": grad}',
            'return {"pred": pred, "where": Path("x")}',
        ).replace(
            "from types import ModuleType", "from pathlib import Path\nfrom types import ModuleType"
        ),
        encoding="utf-8",
    )
    assignment = load_assignment(ASSIGNMENT, root=course / "assignments")
    [problem] = fixture_problems(assignment)
    assert "test_mse.py: the @public_fixture returned what a weights-only load refuses" in problem
