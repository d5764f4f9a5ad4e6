"""The walkthrough notebook rendered from the manifest's `[walkthrough]` table and the stubs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grader.authoring.validate import notebook_problems
from grader.cli import main
from grader.course.manifest import available_assignments, load_assignment, parse_manifest
from grader.errors import ConfigError
from grader.notebook.walkthrough import (
    has_template,
    render_walkthrough,
    walkthrough_problems,
)
from tests.support import COURSE_ROOT


def sources(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells]


@pytest.fixture
def losses_course(tmp_path: Path) -> Path:
    """A course holding a copy of pytorch_losses (its public side is all the notebook needs)."""
    shutil.copytree(
        COURSE_ROOT / "assignments" / "pytorch_losses",
        tmp_path / "assignments" / "pytorch_losses",
    )
    return tmp_path


@pytest.mark.parametrize("assignment_id", available_assignments(COURSE_ROOT / "assignments"))
def test_every_committed_walkthrough_is_what_its_template_renders(assignment_id: str) -> None:
    assignment = load_assignment(assignment_id, root=COURSE_ROOT / "assignments")
    assert has_template(assignment)
    assert walkthrough_problems(assignment) == []


def test_each_part_gets_its_cell_a_check_and_its_demos(losses_course: Path) -> None:
    assignment = parse_manifest(losses_course / "assignments/pytorch_losses/assignment.toml")
    cells = json.loads(render_walkthrough(assignment))["cells"]
    texts = ["".join(cell["source"]) for cell in cells]
    assert 'if "google.colab" in sys.modules:' in texts[0]  # Colab's set-up comes first
    assert texts[1].startswith("# Loss functions by hand") and "**How to work.**" in texts[1]
    assert texts[2].startswith("from grader.notebook import check, submit\n")
    assert "import torch.nn.functional as F" in texts[2]
    for part_id, imported in (("mse", "mse_loss"), ("cross_entropy", "cross_entropy")):
        [marked] = [c for c in cells if c["metadata"].get("tags") == [f"part:{part_id}"]]
        at = cells.index(marked)
        assert texts[at] == (
            f"# part: {part_id}\n# Write your code in {part_id}.py, or replace the import "
            f"below with your own code.\nfrom {part_id} import {imported}"
        )
        assert texts[at - 1].startswith("## Part ")
        assert texts[at + 1].endswith(f'check("{part_id}")')
        assert f"{imported}(" in texts[at + 2]  # the author's demonstration follows
    assert texts[-2:] == ["check()", "submit()"]
    assert all(not cell.get("outputs") for cell in cells if cell["cell_type"] == "code")


def test_validate_names_the_command_that_rewrites_a_stale_walkthrough(
    losses_course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = losses_course / "assignments/pytorch_losses"
    manifest = folder / "assignment.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("## Part 1: `mse.py`", "## Part 1: MSE"),
        encoding="utf-8",
    )
    assignment = parse_manifest(manifest)
    assert notebook_problems(assignment) == [
        "walkthrough.ipynb is out of date with [walkthrough] in assignment.toml and the stubs: "
        "rewrite it with python -m grader build notebook -a pytorch_losses, then commit it "
        "(edit the template, not the notebook)"
    ]
    monkeypatch.chdir(losses_course)
    assert main(["build", "notebook", "-a", "pytorch_losses", "--course", str(losses_course)]) == 0
    assert notebook_problems(assignment) == []
    assert any(
        text.startswith("## Part 1: MSE\n") for text in sources(folder / "walkthrough.ipynb")
    )


def test_a_function_added_to_a_stub_is_imported_by_its_cell(losses_course: Path) -> None:
    folder = losses_course / "assignments/pytorch_losses"
    with (folder / "mse.py").open("a", encoding="utf-8") as stub:
        stub.write("\n\ndef mse_grad(pred, target):\n    raise NotImplementedError\n")
    assignment = parse_manifest(folder / "assignment.toml")
    assert "out of date" in walkthrough_problems(assignment)[0]
    assert "from mse import mse_grad, mse_loss" in render_walkthrough(assignment)


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("[walkthrough.parts.mean_squared]\nintro = 'x'\n", "names mean_squared, not a part"),
        ("[walkthrough.parts.mse]\nintroduction = 'x'\n", "unknown key introduction"),
        ("[walkthrough.parts.mse]\ncells = 'x'\n", "cells must be a list of strings"),
    ],
)
def test_a_template_mistake_names_the_table_and_the_key(
    losses_course: Path, table: str, named: str
) -> None:
    manifest = losses_course / "assignments/pytorch_losses/assignment.toml"
    text = manifest.read_text(encoding="utf-8")
    text = text[: text.index("[walkthrough.parts.mse]")] + table
    manifest.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=named):
        render_walkthrough(parse_manifest(manifest))


def test_without_a_template_the_notebook_is_left_as_written(losses_course: Path) -> None:
    manifest = losses_course / "assignments/pytorch_losses/assignment.toml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text[: text.index("[walkthrough]")], encoding="utf-8")
    assignment = parse_manifest(manifest)
    assert not has_template(assignment)
    assert walkthrough_problems(assignment) == []
    with pytest.raises(ConfigError, match=r"\[walkthrough\] is missing"):
        render_walkthrough(assignment)
