from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.course.manifest import choose_assignment, load_assignment, parse_manifest
from grader.course.root import AssignmentChoiceNeeded, find_course_root
from grader.errors import ConfigError
from grader.student.check import again_command


def test_the_manifest_matches_the_assignment_contract() -> None:
    assignment = load_assignment("pytorch_basics")
    assert assignment.id == "pytorch_basics"
    assert {p.id: (p.file, p.points) for p in assignment.parts} == {
        "manual_backprop": ("manual_backprop.py", 20),
        "autograd_loop": ("autograd_loop.py", 15),
        "custom_sigmoid": ("custom_sigmoid.py", 20),
        "two_layer_net": ("two_layer_net.py", 20),
        "dataloader_training": ("dataloader_training.py", 15),
        "device_benchmark": ("device_benchmark.py", 10),
    }
    assert assignment.max_score == 100
    assert assignment.hidden_tests_dir.is_dir()


def test_unknown_assignment_lists_the_available_ones() -> None:
    with pytest.raises(ConfigError, match="available: pytorch_basics"):
        load_assignment("nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[assignment]\nid='a'\n", "at least one"),
        ("[assignment]\nid='a'\n[[parts]]\nid='p'\nfile='../x.py'\npoints=1\n", "plain .py"),
        ("[assignment]\nid='a'\n[[parts]]\nid='p'\n", "id, file and points"),
        ("[assignment]\n[[parts]]\nid='p'\nfile='p.py'\npoints=1\n[limits]\nbogus=1\n", "limits"),
        (
            "[assignment]\n[[parts]]\nid='p'\nfile='p.py'\npoints=1\n[visibility]\nhidden='x'\n",
            "visibility",
        ),
        ("not toml [", "cannot read"),
    ],
)
def test_bad_manifests_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "a" / "assignment.toml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        parse_manifest(path)
    assert str(path) in str(caught.value)


# -- a course of several assignments ----------------------------------------------------------


@pytest.fixture
def two_assignments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course with assignments `first` (part p, p.py) and `second` (part q, q.py)."""
    root = tmp_path / "course"
    for name, part in (("first", "p"), ("second", "q")):
        folder = root / "assignments" / name
        folder.mkdir(parents=True)
        (folder / "assignment.toml").write_text(
            f"[assignment]\nid = '{name}'\n[[parts]]\nid = '{part}'\nfile = '{part}.py'\n"
            "points = 1\n"
        )
    monkeypatch.delenv("GRADER_COURSE", raising=False)
    monkeypatch.chdir(root)
    return root


def test_the_course_is_found_above_the_working_folder(
    two_assignments: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = two_assignments / "somewhere" / "deeper"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    assert find_course_root() == two_assignments
    monkeypatch.chdir("/")
    monkeypatch.setenv("GRADER_COURSE", str(two_assignments))
    assert find_course_root() == two_assignments


def test_without_a_choice_the_command_is_suggested_with_each_a(
    two_assignments: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(AssignmentChoiceNeeded, match="2 assignments"):
        load_assignment(None)
    assert main(["build", "starter"]) == 2
    err = capsys.readouterr().err
    assert "python -m grader build starter -a first\n" in err
    assert err.endswith("python -m grader build starter -a second\n")


def test_a_submission_holding_one_assignments_files_picks_it(two_assignments: Path) -> None:
    submission = two_assignments / "student"
    submission.mkdir()
    (submission / "q.py").write_text("")
    assignment, note = choose_assignment(None, submission)
    assert assignment.id == "second"
    assert note == f"second: {submission} holds its files and no other assignment's"
    (submission / "p.py").write_text("")
    with pytest.raises(AssignmentChoiceNeeded):
        choose_assignment(None, submission)
    assert choose_assignment("first", submission) == (load_assignment("first"), "")
    # A folder holding just the kit's zip is told by the zip's files, as it is graded.
    zipped = two_assignments / "zipped"
    zipped.mkdir()
    with zipfile.ZipFile(zipped / "second_submission.zip", "w") as archive:
        archive.writestr("q.py", "")
    assert choose_assignment(None, zipped)[0].id == "second"


def test_a_notebook_picks_the_assignment_its_cells_are_marked_for(two_assignments: Path) -> None:
    """Every assignment's walkthrough has the same name; the `part:` marks tell them apart."""
    for name in ("first", "second"):
        manifest = two_assignments / "assignments" / name / "assignment.toml"
        with_notebook = "\nnotebook = 'walkthrough.ipynb'\n[[parts]]"
        manifest.write_text(manifest.read_text().replace("\n[[parts]]", with_notebook))
    notebook = two_assignments / "walkthrough.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "source": "# part: q\ndef f(): ...\n"}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    assert choose_assignment(None, notebook)[0].id == "second"
    archive = two_assignments / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(notebook, "work/walkthrough.ipynb")
    assert choose_assignment(None, archive)[0].id == "second"
    # Marked for neither (or both): the choice is left to -a.
    notebook.write_text(notebook.read_text().replace("part: q", "part: pq"))
    with pytest.raises(AssignmentChoiceNeeded):
        choose_assignment(None, notebook)


def test_inside_an_assignments_folder_that_one_is_picked(two_assignments: Path) -> None:
    assignment, note = choose_assignment(None, two_assignments / "assignments" / "first")
    assert assignment.id == "first"
    assert "inside its folder" in note


def test_checks_advice_names_the_assignment_when_there_are_several(two_assignments: Path) -> None:
    assert again_command("first") == "python -m grader check -a first"
    shutil.rmtree(two_assignments / "assignments" / "second")
    assert again_command("first") == "python -m grader check"
