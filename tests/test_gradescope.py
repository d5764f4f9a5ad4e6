"""The `gradescope` command, run the way Gradescope runs it.

The autograder zip is built, unpacked into a folder laid out like /autograder (source/,
submission/, results/, submission_metadata.json), and `python -m grader gradescope --root`
runs from the unpacked source/ on the reference, the stubs and a broken submission. Every
results.json must satisfy Gradescope's format (tests/gradescope_results.schema.json) and add up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grader.authoring.build import build_autograder
from grader.course.manifest import load_assignment
from grader.grading.grade import PROVISIONAL_MESSAGE, GradeSettings
from grader.grading.gradescope_run import read_metadata, run_gradescope
from grader.intake.upload import pick_upload
from grader.results.gradescope import results_dict
from grader.results.model import GradingResult, PartResult, SubmissionInfo, TestResult
from tests.support import ASSIGNMENT_DIR, PART_FILES, SOLUTIONS_DIR

SCHEMA = json.loads((Path(__file__).with_name("gradescope_results.schema.json")).read_text())
METADATA = {
    "id": 123456,
    "created_at": "2026-07-01T14:22:32.365935-07:00",
    "assignment": {"id": 25828, "title": "PyTorch basics", "total_points": "100.0"},
    "users": [{"email": "student@example.com", "id": 1234, "name": "Student User"}],
    "previous_submissions": [],
}
ASSIGNMENT = load_assignment("pytorch_basics")


def validate(results: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(results)


def test_the_top_level_output_shows_only_what_visible_tests_scored() -> None:
    def test(part: str, visibility: str, score: float, max_score: float) -> TestResult:
        return TestResult(
            name=f"{part} {visibility} {score}",
            part=part,
            outcome="passed" if score else "failed",
            weight=1.0,
            visibility=visibility,
            score=score,
            max_score=max_score,
        )

    tests = (
        # Weights are often fractions of a part's points (30 points over 7 tests).
        test("manual_backprop", "visible", 30 / 7, 5.0),
        test("manual_backprop", "after_published", 15.0, 15.0),
        test("autograd_loop", "visible", 40 / 3, 15.0),
        test("autograd_loop", "visible", 0.0, 0.0),
        test("custom_sigmoid", "after_due_date", 0.0, 20.0),
        test("two_layer_net", "visible", 0.0, 0.0),
        test("two_layer_net", "hidden", 20.0, 20.0),
    )
    parts = tuple(
        PartResult(
            id=part.id,
            file=part.file,
            score=sum(t.score for t in tests if t.part == part.id),
            max_score=part.points,
            source="file",
        )
        for part in ASSIGNMENT.parts
    )
    result = GradingResult(
        assignment=ASSIGNMENT.id,
        score=sum(part.score for part in parts),
        max_score=ASSIGNMENT.max_score,
        parts=parts,
        tests=tests,
        seed=1,
        device="cpu",
        duration_s=1.0,
        submission=SubmissionInfo(sha256="", files=()),
        environment={},
    )
    lines = results_dict(result)["output"].splitlines()
    assert lines[:4] == [
        "manual_backprop: graded; 4.29 / 5 from the tests shown now; the rest is shown once "
        "grades are published",
        "autograd_loop: 13.33 / 15",
        "custom_sigmoid: graded; its score is shown after the due date",
        "two_layer_net: graded; its score is shown to course staff only",
    ]


def test_a_gated_pass_says_it_is_not_counted_yet() -> None:
    waiting = TestResult(
        "no autograd",
        "manual_backprop",
        "passed",
        1.0,
        message="(This check counts once ...)",
        max_score=2.0,
        waits_for="'Gradients [float64]'",
    )
    counted = TestResult("loss", "manual_backprop", "passed", 1.0, score=2.0, max_score=2.0)
    result = GradingResult(
        assignment=ASSIGNMENT.id,
        score=2.0,
        max_score=ASSIGNMENT.max_score,
        parts=(PartResult("manual_backprop", "manual_backprop.py", 2.0, 20.0),),
        tests=(waiting, counted),
        seed=1,
        device="cpu",
        duration_s=1.0,
        submission=SubmissionInfo(sha256="", files=()),
    )
    written = results_dict(result)
    validate(written)
    held, scored = written["tests"]
    assert held["status"] == "failed" and held["score"] == 0
    assert held["output"] == (
        "Passed, not counted yet (waits for 'Gradients [float64]').\n\n(This check counts once ...)"
    )
    assert scored["status"] == "passed" and scored["output"] == ""


def test_schema_is_valid_and_rejects_what_gradescope_rejects() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validate({"score": 1.0})
    validate({"tests": [{"score": 1.0, "max_score": 1.0}]})
    for wrong in (
        {},
        {"tests": [{"max_score": 1.0}]},
        {"score": 1.0, "visibility": "sometimes"},
        {"score": 1.0, "tests": [{"score": 1, "status": "error"}]},
        {"score": 1.0, "tests": [{"score": 1, "maxscore": 1}]},
        {"score": 1.0, "output": "x" * 100_001},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(wrong)


# -- the whole command, on a folder laid out like /autograder --------------------------------


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_autograder(
        "pytorch_basics", output=tmp_path_factory.mktemp("build") / "autograder.zip"
    ).path


def gradescope_root(base: Path, autograder_zip: Path) -> Path:
    """A fresh /autograder: the zip unpacked in source/, an empty submission/ and results/."""
    (base / "source").mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(base / "source")
    (base / "submission").mkdir()
    (base / "results").mkdir()
    (base / "submission_metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    return base


def run_command(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m grader gradescope` from the unpacked source, as run_autograder does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
    return subprocess.run(
        [sys.executable, "-m", "grader", "gradescope", "--root", str(root), *args],
        cwd=root / "source",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def zip_folder(folder: Path, target: Path, *, inside: str) -> None:
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, f"{inside}/{path.name}")


@pytest.fixture(scope="module")
def graded(
    tmp_path_factory: pytest.TempPathFactory, autograder_zip: Path
) -> dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]]:
    """Reference (loose files), stubs (one zip, files in a folder), broken (a nested folder)."""
    base = tmp_path_factory.mktemp("gradescope")
    roots = {name: gradescope_root(base / name, autograder_zip) for name in ("ref", "stub", "bad")}
    for name in PART_FILES:
        shutil.copy(SOLUTIONS_DIR / name, roots["ref"] / "submission" / name)
    stubs = base / "stub-files"
    stubs.mkdir()
    for name in PART_FILES:
        shutil.copy(ASSIGNMENT_DIR / name, stubs / name)
    zip_folder(stubs, roots["stub"] / "submission" / "pytorch_basics_submission.zip", inside="hw")
    # One part right, one with a syntax error, one missing, the rest untouched stubs.
    work = roots["bad"] / "submission" / "my work"
    work.mkdir()
    for name in PART_FILES:
        shutil.copy(ASSIGNMENT_DIR / name, work / name)
    shutil.copy(SOLUTIONS_DIR / "custom_sigmoid.py", work / "custom_sigmoid.py")
    (work / "manual_backprop.py").write_text("def forward_backward(x, y, w1, w2:\n    pass\n")
    (work / "autograd_loop.py").unlink()
    outcomes = {}
    for name, root in roots.items():
        process = run_command(root)
        results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        outcomes[name] = (process, results, root)
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("case", ["ref", "stub", "bad"])
def test_results_follow_gradescope_format_and_add_up(
    graded: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]], case: str
) -> None:
    process, results, _root = graded[case]
    assert process.returncode == 0, process.stderr
    validate(results)
    assert results["visibility"] == "visible"
    assert results["stdout_visibility"] == "hidden"
    assert results["extra_data"]["grader_error"] is None
    tests = results["tests"]
    assert tests, "a graded submission lists its tests"
    assert sum(t["score"] for t in tests) == pytest.approx(results["score"], abs=1e-3)
    assert sum(t["max_score"] for t in tests) == pytest.approx(ASSIGNMENT.max_score, abs=1e-3)
    part_numbers = {part.id: index for index, part in enumerate(ASSIGNMENT.parts, start=1)}
    for test in tests:
        parts = [tag for tag in test["tags"] if tag in part_numbers]
        assert len(parts) == 1, test
        assert test["number"].split(".")[0] == str(part_numbers[parts[0]])
        # Only the zero-point warnings carry a visibility marker ("visible"); the manifest
        # decides every test that has points.
        expected = ASSIGNMENT.hidden_visibility if test["max_score"] > 0 else test["visibility"]
        assert test["visibility"] == expected and expected in (
            ASSIGNMENT.hidden_visibility,
            "visible",
        )
        assert len(test["output"]) < 100_000
        if test["max_score"] > 0:
            assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")


@pytest.mark.slow
def test_reference_scores_full_marks_and_keeps_only_metadata_ids(
    graded: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]],
) -> None:
    process, results, root = graded["ref"]
    assert results["score"] == pytest.approx(ASSIGNMENT.max_score, abs=1e-3), results["output"]
    assert all(test["status"] == "passed" for test in results["tests"])
    # Hidden tests decide every part: the output students see before publication names no
    # part's score (the parts' scores would add up to the total Gradescope hides).
    for part in ASSIGNMENT.parts:
        assert (
            f"{part.id}: graded; its score is shown once grades are published"
            in (results["output"])
        )
        assert f"{part.points:g} / {part.points:g}" not in results["output"]
    assert results["extra_data"]["gradescope"] == {
        "submission_id": 123456,
        "created_at": METADATA["created_at"],
        "assignment_id": 25828,
        "user_ids": [1234],
    }
    text = (root / "results" / "results.json").read_text(encoding="utf-8")
    assert "student@example.com" not in text and "Student User" not in text
    assert f"seed {results['extra_data']['seed']} " in process.stdout
    if os.geteuid() == 0:
        assert (root / "submission_metadata.json").stat().st_mode & 0o077 == 0


@pytest.mark.slow
def test_stubs_in_a_zip_score_zero(
    graded: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]],
) -> None:
    _process, results, _root = graded["stub"]
    assert results["score"] == 0, results["output"]
    # Every test with points fails; zero-point warnings (no numpy on tensors) may pass.
    assert all(test["status"] == "failed" for test in results["tests"] if test["max_score"] > 0)
    assert "file missing" not in results["output"]


@pytest.mark.slow
def test_broken_submission_keeps_the_working_part_and_says_what_is_wrong(
    graded: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]],
) -> None:
    _process, results, _root = graded["bad"]
    expected = ASSIGNMENT.part("custom_sigmoid").points
    assert results["score"] == pytest.approx(expected, abs=1e-3), results["output"]
    assert "manual_backprop.py has a syntax error on line 1" in results["output"]
    assert "autograd_loop: 0 / 15 (file missing)" in results["output"]


@pytest.mark.slow
def test_grader_runs_from_the_unpacked_source(
    graded: dict[str, tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]],
) -> None:
    root = graded["ref"][2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
    where = subprocess.run(
        [sys.executable, "-c", "import grader; print(grader.__file__)"],
        cwd=root / "source",
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(root / "source")


def test_unknown_assignment_still_writes_a_visible_explanation(
    tmp_path: Path, autograder_zip: Path
) -> None:
    root = gradescope_root(tmp_path / "autograder", autograder_zip)
    process = run_command(root, "-a", "no_such_assignment")
    assert process.returncode == 0, process.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    validate(results)
    assert results["score"] == 0
    [notice] = results["tests"]
    assert notice["visibility"] == "visible" and "not your fault" in notice["output"]
    assert "no_such_assignment" in results["extra_data"]["grader_error"]
    assert "no_such_assignment" in process.stdout


# -- the pieces, without grading ----------------------------------------------------------------


def test_provisional_results_come_first_and_a_crash_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission_metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    seen: dict[str, Any] = {}

    def crashing_grade(path: Path, assignment: Any, settings: GradeSettings) -> None:
        seen["results"] = json.loads((root / "results" / "results.json").read_text())
        seen["hide"] = settings.hide
        raise RuntimeError("the grader broke")

    monkeypatch.setattr("grader.grading.gradescope_run.grade_in_worker", crashing_grade)
    run = run_gradescope(
        root, assignment_name="pytorch_basics", settings=GradeSettings(device="cpu")
    )
    validate(seen["results"])
    assert PROVISIONAL_MESSAGE in seen["results"]["extra_data"]["grader_error"]
    layout = root.resolve()
    assert set(seen["hide"]) == {layout / "results", layout / "submission_metadata.json"}
    final = json.loads(run.results_path.read_text())
    validate(final)
    assert "RuntimeError: the grader broke" in final["extra_data"]["grader_error"]
    assert final["extra_data"]["gradescope"]["submission_id"] == 123456
    assert [t["name"] for t in final["tests"]] == ["Autograder problem"]
    assert run.result is not None and run.result.grader_error


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    folder = tmp_path / "submission"
    folder.mkdir()
    return folder


def test_loose_files_win_over_bundles(upload: Path) -> None:
    (upload / "src").mkdir()
    (upload / "src" / "manual_backprop.py").write_text("x = 1\n")
    (upload / "old.zip").write_bytes(b"")
    chosen, notes = pick_upload(upload, ASSIGNMENT)
    assert chosen == upload
    assert notes == ("Graded the loose files you uploaded; ignored old.zip.",)


def test_a_single_zip_or_renamed_notebook_is_graded(upload: Path) -> None:
    (upload / "walkthrough (1).ipynb").write_text("{}")
    assert pick_upload(upload, ASSIGNMENT) == (upload / "walkthrough (1).ipynb", ())
    (upload / "deep").mkdir()
    (upload / "deep" / "hw.zip").write_bytes(b"")
    chosen, notes = pick_upload(upload, ASSIGNMENT)
    assert chosen == upload / "deep" / "hw.zip"
    assert "graded deep/hw.zip" in notes[0]


def test_links_and_junk_are_never_picked(upload: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.zip"
    secret.write_bytes(b"")
    (upload / "link.zip").symlink_to(secret)
    (upload / "__MACOSX").mkdir()
    (upload / "__MACOSX" / "hw.zip").write_bytes(b"")
    chosen, notes = pick_upload(upload, ASSIGNMENT)
    assert chosen == upload
    assert "None of the assignment's files were found" in notes[0]
    assert "manual_backprop.py" in notes[0] and "walkthrough.ipynb" in notes[0]


def test_metadata_keeps_ids_only_and_tolerates_anything(tmp_path: Path) -> None:
    path = tmp_path / "submission_metadata.json"
    assert read_metadata(path) == {}
    path.write_text(json.dumps(METADATA))
    assert read_metadata(path) == {
        "submission_id": 123456,
        "created_at": METADATA["created_at"],
        "assignment_id": 25828,
        "user_ids": [1234],
    }
    for broken in ("{not json", "[1, 2]", '{"users": "everyone", "id": [1]}', "\xff"):
        path.write_text(broken, encoding="latin-1")
        assert read_metadata(path) == {}
