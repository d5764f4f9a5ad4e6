"""`python -m grader new`: a scaffolded assignment validates, grades and checks as created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.authoring.scaffold import scaffold_assignment
from grader.cli import main
from grader.course.manifest import parse_manifest
from grader.notebook.walkthrough import walkthrough_problems
from tests.support import COURSE_ROOT, run_grader_cli


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One course made by `new demo`, for the tests that only read it (scaffolding runs the
    reference to write the public fixtures)."""
    course = tmp_path_factory.mktemp("scaffolded")
    assert main(["new", "demo", "--course", str(course), "--title", "A demo"]) == 0
    return course


def test_new_writes_every_file_of_an_assignment(scaffolded: Path) -> None:
    created = {p.relative_to(scaffolded).as_posix() for p in scaffolded.rglob("*") if p.is_file()}
    assert created == {
        "assignments/demo/assignment.toml",
        "assignments/demo/scale.py",
        "assignments/demo/public_tests/test_scale.py",
        "assignments/demo/public_tests/conftest.py",
        "assignments/demo/public_fixtures/scale.pt",
        "assignments/demo/walkthrough.ipynb",
        "assignments/demo/README.md",
        "solutions/demo/scale.py",
        "solutions/demo/hidden_tests/probes.py",
        "solutions/demo/hidden_tests/test_scale.py",
    }
    assert 'title = "A demo"' in (scaffolded / "assignments/demo/assignment.toml").read_text()


def test_new_writes_the_kit_files_students_install_from(scaffolded: Path) -> None:
    kit = scaffolded / "assignments/demo"
    readme = (kit / "README.md").read_text()
    assert 'python -m pip install -c constraints.txt -e ".[lab]"' in readme
    assert "python -m grader submit" in readme


def _plain_pytest(
    folder: Path, *, student_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`pytest public_tests` run in `folder`, as a student would, with no grader option."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env.pop("GRADER_STUDENT_DIR", None)
    if student_dir is not None:
        env["GRADER_STUDENT_DIR"] = str(student_dir)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "public_tests"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_plain_pytest_runs_the_scaffolded_public_tests(tmp_path: Path) -> None:
    scaffold_assignment(tmp_path, "demo")
    folder = tmp_path / "assignments/demo"
    on_reference = _plain_pytest(folder, student_dir=tmp_path / "solutions/demo")
    assert on_reference.returncode == 0, on_reference.stdout + on_reference.stderr
    assert "2 passed" in on_reference.stdout
    on_stubs = _plain_pytest(folder)
    assert on_stubs.returncode == 1, on_stubs.stdout + on_stubs.stderr
    assert "NotImplementedError" in on_stubs.stdout
    assert "not found in `markers`" not in on_stubs.stdout + on_stubs.stderr


def test_scaffolded_notebook_is_what_its_template_renders(scaffolded: Path) -> None:
    assignment = parse_manifest(scaffolded / "assignments/demo/assignment.toml")
    assert walkthrough_problems(assignment) == []
    cells = json.loads((scaffolded / "assignments/demo/walkthrough.ipynb").read_text())["cells"]
    marked = [cell for cell in cells if cell["metadata"].get("tags") == ["part:scale"]]
    assert len(marked) == 1
    assert "".join(marked[0]["source"]).startswith("# part: scale\n")
    sources = ["".join(cell["source"]) for cell in cells]
    assert 'check("scale")' in sources[sources.index("".join(marked[0]["source"])) + 1]
    assert "print(scale(torch.arange(3.0), 2.0))" in sources


def test_new_refuses_a_bad_or_taken_name(
    scaffolded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "Bad-Name", "--course", str(tmp_path)]) == 2
    assert "lower case letters" in capsys.readouterr().err
    assert main(["new", "demo", "--course", str(scaffolded)]) == 2
    assert "already exists" in capsys.readouterr().err


SHIFT_REFERENCE = '''\
"""Part `shift`: add a number to every element."""

from __future__ import annotations

import torch


def shift(x: torch.Tensor, offset: float) -> torch.Tensor:
    """Return `x + offset`, a new tensor of x's shape, dtype and device."""
    # BEGIN SOLUTION: add offset to x
    return x + offset
    # END SOLUTION
'''


def add_a_part_as_an_author_does(course: Path) -> None:
    """The second part's files an author writes: its manifest entry, its reference with solution
    markers, its probe and hidden test, its public test with a @public_fixture."""
    with (course / "assignments/demo/assignment.toml").open("a", encoding="utf-8") as manifest:
        manifest.write(
            '\n[[parts]]\nid = "shift"\nfile = "shift.py"\npoints = 10\n\n'
            '[walkthrough.parts.shift]\nintro = "## Part 2: `shift.py`"\n'
        )
    (course / "solutions/demo/shift.py").write_text(SHIFT_REFERENCE, encoding="utf-8")
    with (course / "solutions/demo/hidden_tests/probes.py").open("a", encoding="utf-8") as probes:
        probes.write(
            "\n\ndef shift_probe(part, seed, device):\n"
            "    x = torch.randn(6, generator=torch.Generator().manual_seed(seed)).to(device)\n"
            '    return {"y": part.shift(x, 0.5)}\n'
        )
    (course / "solutions/demo/hidden_tests/test_shift.py").write_text(
        "import probes\nimport pytest\n\nfrom grader.testing import assert_tensor_close\n\n\n"
        "@pytest.mark.points(2)\ndef test_shift_matches_reference(compare, seed, device):\n"
        '    """shift(x, 0.5) matches the reference on random x"""\n'
        "    got, want = compare(probes.shift_probe, seed=seed, device=device)\n"
        '    assert_tensor_close(got["y"], want["y"], what="shift(x, 0.5)")\n',
        encoding="utf-8",
    )
    (course / "assignments/demo/public_tests/test_shift.py").write_text(
        "from types import ModuleType\nfrom typing import Any\n\nimport pytest\nimport torch\n\n"
        "from grader.student.fixtures import public_fixture\n\n\n@public_fixture\n"
        "def expected(reference: ModuleType) -> dict[str, Any]:\n"
        "    x = torch.arange(4.0)\n"
        '    return {"x": x, "y": reference.shift(x, 0.5)}\n\n\n'
        "@pytest.mark.points(1)\n"
        "def test_shift_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:\n"
        '    """shift(x, 0.5) matches the reference\'s output"""\n'
        '    assert torch.equal(part.shift(expected["x"], 0.5), expected["y"])\n',
        encoding="utf-8",
    )


@pytest.mark.slow
def test_an_author_adds_a_part_builds_public_and_it_validates_and_grades(tmp_path: Path) -> None:
    course = tmp_path / "course"
    scaffold_assignment(course, "demo")
    add_a_part_as_an_author_does(course)
    for target in ("public", "notebook"):
        built = run_grader_cli("build", target, "--course", course)
        assert built.returncode == 0, built.stdout + built.stderr
    stub = (course / "assignments/demo/shift.py").read_text(encoding="utf-8")
    assert stub.endswith('    raise NotImplementedError("shift: add offset to x")\n')
    assert (course / "assignments/demo/public_fixtures/shift.pt").is_file()

    validated = run_grader_cli("validate", "--course", course, timeout=900)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "demo: ok" in validated.stdout
    for folder, score in (("solutions/demo", 20), ("assignments/demo", 0)):
        report = tmp_path / f"{score}.json"
        graded = run_grader_cli(
            "grade", course / folder, "--course", course, "--seed", "7", "--report", report
        )
        assert graded.returncode == 0, graded.stderr
        assert json.loads(report.read_text())["score"] == score, folder


def test_new_in_a_folder_with_no_course_starts_one_there(tmp_path: Path) -> None:
    """Not in the course this grader came with (its checkout, where find_course_root falls
    back for the other commands): a new TA's first assignment landed there."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_COURSE"}
    process = run_grader_cli("new", "vecnet", cwd=tmp_path, environment=env)
    assert process.returncode == 0, process.stdout + process.stderr
    assert (tmp_path / "assignments" / "vecnet" / "assignment.toml").is_file()
    assert (tmp_path / "solutions" / "vecnet").is_dir()
    assert str(tmp_path.resolve()) in " ".join(process.stdout.split())
    assert not (COURSE_ROOT / "assignments" / "vecnet").exists()


TWO_PART_MANIFEST = """\
[assignment]
id = "demo"
title = "Scale and shift"
notebook = "walkthrough.ipynb"

[[parts]]
id = "scale"
file = "scale.py"
points = 10

[[parts]]
id = "shift"
file = "shift.py"
points = 10

[walkthrough.parts.scale]
intro = "## Part 1: `scale.py`"

[walkthrough.parts.shift]
intro = "## Part 2: `shift.py`"
"""

SCALE_REFERENCE = '''\
"""Part `scale`: multiply a tensor by a number."""

import torch


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Return `x * factor`, a new tensor of x's shape, dtype and device."""
    # BEGIN SOLUTION: multiply x by factor
    return x * factor
    # END SOLUTION
'''

TWO_PART_PROBES = """\
import torch


def scale_probe(part, seed):
    return {"y": part.scale(torch.randn(6, generator=torch.Generator().manual_seed(seed)), 2.5)}


def shift_probe(part, seed):
    return {"y": part.shift(torch.randn(6, generator=torch.Generator().manual_seed(seed)), 0.5)}
"""

# Both parts' hidden tests in one file: each test names its part.
TWO_PART_HIDDEN_TESTS = '''\
import probes
import pytest

from grader.testing import assert_tensor_close


@pytest.mark.part("scale")
@pytest.mark.points(1)
def test_scale_matches_reference(compare, seed):
    """scale(x, 2.5) matches the reference on random x"""
    got, want = compare(probes.scale_probe, seed=seed)
    assert_tensor_close(got["y"], want["y"], what="scale(x, 2.5)")


@pytest.mark.part("shift")
@pytest.mark.points(1)
def test_shift_matches_reference(compare, seed):
    """shift(x, 0.5) matches the reference on random x"""
    got, want = compare(probes.shift_probe, seed=seed)
    assert_tensor_close(got["y"], want["y"], what="shift(x, 0.5)")
'''


def _contents(course: Path) -> dict[str, bytes]:
    """Each file under `course` by its path: what it holds."""
    files = (path for path in course.rglob("*") if path.is_file())
    return {path.relative_to(course).as_posix(): path.read_bytes() for path in files}


@pytest.mark.slow
def test_a_two_part_assignment_in_five_files_its_author_writes(tmp_path: Path) -> None:
    """From `new`, an author writes the manifest, two references, the probes and one hidden
    test file for both parts (no public tests); new and build write every other file."""
    course = tmp_path / "course"
    scaffold_assignment(course, "demo")
    generated = _contents(course)
    for example in ("public_tests/test_scale.py", "public_fixtures/scale.pt"):
        (course / "assignments/demo" / example).unlink()
    (course / "solutions/demo/hidden_tests/test_scale.py").unlink()
    written = {
        "assignments/demo/assignment.toml": TWO_PART_MANIFEST,
        "solutions/demo/scale.py": SCALE_REFERENCE,
        "solutions/demo/shift.py": SHIFT_REFERENCE,
        "solutions/demo/hidden_tests/probes.py": TWO_PART_PROBES,
        "solutions/demo/hidden_tests/test_demo.py": TWO_PART_HIDDEN_TESTS,
    }
    for path, text in written.items():
        (course / path).write_text(text, encoding="utf-8")
    authored = {path for path, data in _contents(course).items() if generated.get(path) != data}
    assert len(authored) <= 5, sorted(authored)
    for target in ("public", "notebook"):
        built = run_grader_cli("build", target, "--course", course)
        assert built.returncode == 0, built.stdout + built.stderr

    validated = run_grader_cli("validate", "--course", course, timeout=900)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "demo: ok" in validated.stdout
    for folder, score in (("solutions/demo", 20), ("assignments/demo", 0)):
        report = tmp_path / f"{score}.json"
        graded = run_grader_cli(
            "grade", course / folder, "--course", course, "--seed", "7", "--report", report
        )
        assert graded.returncode == 0, graded.stderr
        parts = json.loads(report.read_text())["parts"]
        assert {id: part["score"] for id, part in parts.items()} == {
            "scale": score / 2,
            "shift": score / 2,
        }

    kit_zip = tmp_path / "kit.zip"
    starter = run_grader_cli("build", "starter", "--course", course, "-o", kit_zip)
    assert starter.returncode == 0, starter.stdout + starter.stderr
    with zipfile.ZipFile(kit_zip) as archive:
        archive.extractall(tmp_path / "kit")
    (kit_assignment,) = (tmp_path / "kit").rglob("assignments/demo")
    checked = run_grader_cli("check", cwd=kit_assignment)
    lines = " ".join(checked.stdout.split())
    for part in ("scale", "shift"):
        assert f"{part}: no public tests" in lines, checked.stdout + checked.stderr
