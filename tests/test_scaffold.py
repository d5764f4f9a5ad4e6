"""`python -m grader new`: a scaffolded assignment validates, grades and checks as created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.cli import main
from grader.scaffold import scaffold_assignment
from tests.conftest import run_grader_cli


def test_new_writes_every_file_of_an_assignment(tmp_path: Path) -> None:
    assert main(["new", "demo", "--course", str(tmp_path), "--title", "A demo"]) == 0
    created = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert created == {
        "assignments/demo/assignment.toml",
        "assignments/demo/scale.py",
        "assignments/demo/public_tests/test_scale.py",
        "assignments/demo/public_fixtures/scale.pt",
        "assignments/demo/walkthrough.ipynb",
        "solutions/demo/scale.py",
        "solutions/demo/make_public_fixtures.py",
        "solutions/demo/hidden_tests/probes.py",
        "solutions/demo/hidden_tests/test_scale.py",
    }
    assert 'title = "A demo"' in (tmp_path / "assignments/demo/assignment.toml").read_text()


def test_new_refuses_a_bad_or_taken_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "Bad-Name", "--course", str(tmp_path)]) == 2
    assert "lower case letters" in capsys.readouterr().err
    scaffold_assignment(tmp_path, "demo")
    assert main(["new", "demo", "--course", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
def test_scaffold_validates_and_grades_as_created(tmp_path: Path) -> None:
    course = tmp_path / "course"
    scaffold_assignment(course, "demo")
    validated = run_grader_cli("validate", "--course", course, timeout=900)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "demo: ok" in validated.stdout
    report = tmp_path / "report.json"
    graded = run_grader_cli(
        "grade", course / "solutions/demo", "--course", course, "--seed", "7", "--report", report
    )
    assert graded.returncode == 0, graded.stderr
    assert json.loads(report.read_text())["score"] == 10
