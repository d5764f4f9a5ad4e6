"""`python -m grader validate`: each kind of mistake in an assignment is one line, found early.

Every test breaks one thing in a freshly scaffolded assignment (which validates as created,
see test_scaffold.py) and checks that validate names it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from grader.authoring.public import write_stubs
from grader.authoring.validate import (
    LYING_UNAVAILABLE,
    Validation,
    validate_assignment,
    validation_of,
    validation_report,
)
from grader.course.manifest import load_assignment

# Each test validates a whole scaffolded assignment, probes and hidden tests included.
pytestmark = pytest.mark.slow

SCALE_TESTS = "solutions/demo/hidden_tests/test_scale.py"


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from grader.authoring.scaffold import scaffold_assignment

    root = tmp_path_factory.mktemp("scaffolded")
    scaffold_assignment(root, "demo")
    return root


@pytest.fixture
def course(scaffolded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the scaffolded course, made the current course."""
    root = tmp_path / "course"
    shutil.copytree(scaffolded, root)
    monkeypatch.setenv("GRADER_COURSE", str(root))
    return root


def problems_of(course: Path) -> list[str]:
    lines: list[str] = []
    found = validate_assignment("demo", say=lines.append)
    assert lines == [f"demo: {problem}" for problem in found]
    return found


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def leave_the_solution_in_the_stub(course: Path) -> None:
    """Solution markers that leave the solution in the stub, which then scores."""
    edit(
        course / "solutions/demo/scale.py",
        "    # BEGIN SOLUTION: multiply x by factor\n    result = x * factor\n    return result\n",
        "    result = x * factor\n    return result\n    # BEGIN SOLUTION\n",
    )
    write_stubs(load_assignment("demo"))


def test_a_hidden_test_without_points_is_named_before_any_grading(course: Path) -> None:
    edit(course / SCALE_TESTS, "@pytest.mark.points(1)\n", "")
    leave_the_solution_in_the_stub(course)
    # A stub that scores is found only by grading, which did not run.
    assert problems_of(course) == [
        "hidden test test_scale.py::test_scale_leaves_x_unchanged: needs "
        "@pytest.mark.points(n) with n >= 0"
    ]


def test_a_hidden_test_file_that_names_no_part(course: Path) -> None:
    shutil.copy(course / SCALE_TESTS, course / "solutions/demo/hidden_tests/test_shift.py")
    problems = problems_of(course)
    assert len(problems) == 3
    assert all("test_shift.py" in p and "does not name a part" in p for p in problems)


def test_a_probe_that_imports_the_reference(course: Path) -> None:
    edit(
        course / "solutions/demo/hidden_tests/probes.py",
        "import torch\n",
        "import torch\nimport scale\n",
    )
    problems = problems_of(course)
    assert (
        "probes.py line 6: imports scale, private code; a probe gets the part's module as its "
        "first argument instead"
    ) in problems
    # The sandbox could not import it either: the suite does not even collect.
    assert problems[0] == (
        "hidden test file test_scale.py cannot be collected: "
        "ModuleNotFoundError: No module named 'scale'"
    )


def test_a_notebook_with_two_cells_for_a_part_and_none_for_another(course: Path) -> None:
    # A notebook kept by hand (no [walkthrough] to render it from): only its marked cells are
    # checked, so the edits below are what validate reads, not a notebook out of date.
    manifest = course / "assignments/demo/assignment.toml"
    manifest.write_text(manifest.read_text().partition("\n[walkthrough]")[0] + "\n")
    path = course / "assignments/demo/walkthrough.ipynb"
    notebook = json.loads(path.read_text())
    marked = next(c for c in notebook["cells"] if "part:scale" in c["metadata"].get("tags", []))
    notebook["cells"].append({**marked, "id": "copy"})
    path.write_text(json.dumps(notebook))
    edit(
        course / "assignments/demo/assignment.toml",
        "points = 10\n",
        'points = 10\n\n[[parts]]\nid = "shift"\nfile = "shift.py"\npoints = 5\n',
    )
    for folder in ("assignments", "solutions"):
        shutil.copy(course / folder / "demo/scale.py", course / folder / "demo/shift.py")
    problems = problems_of(course)
    assert "walkthrough.ipynb: 2 cells marked for part scale, expected 1" in problems[1]
    assert "walkthrough.ipynb: 0 cells marked for part shift, expected 1" in problems[2]
    assert problems[0] == "part shift: no hidden test grades it"


def test_a_stub_that_leaks_the_reference(course: Path) -> None:
    shutil.copy(course / "solutions/demo/scale.py", course / "assignments/demo/scale.py")
    assert problems_of(course) == [
        "the starter kit leaks: assignments/demo/scale.py is a copy of demo/scale.py",
        "the starter kit leaks: assignments/demo/scale.py: scale() has the body of "
        "demo/scale.py:scale()",
        "assignments/demo/scale.py is not what its reference generates: run "
        "`python -m grader build public -a demo` and commit the result",
    ]


def test_fixtures_are_compared_within_tolerance(course: Path) -> None:
    path = course / "assignments/demo/public_fixtures/scale.pt"
    fixture = torch.load(path, weights_only=True)
    fixture["y"][0, 0] = torch.nextafter(fixture["y"][0, 0], torch.tensor(1e9, dtype=torch.float64))
    torch.save(fixture, path)
    assert problems_of(course) == []  # one ULP: another CPU's rounding
    fixture["y"][0, 0] += 1e-3
    torch.save(fixture, path)
    [problem] = problems_of(course)
    assert problem.startswith("public_fixtures/scale.pt differs from the reference's: scale['y']")
    assert problem.endswith("run `python -m grader build public -a demo` and commit the result")


def test_stubs_that_score_and_a_missing_lying_check_are_said(
    course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leave_the_solution_in_the_stub(course)
    # Its import fails, as if absent.
    monkeypatch.setitem(sys.modules, "grader.authoring.liars", None)
    lines: list[str] = []
    problems = validate_assignment("demo", say=lines.append)
    assert len(problems) == 1
    assert problems[0].startswith(
        "graded, the stubs got 10/10 on part scale, expected 0: scale(x, f) matches the reference"
    )
    assert lines[-1] == f"demo: {LYING_UNAVAILABLE}"


def test_part_budgets_past_the_platform_s_timeout(course: Path) -> None:
    manifest = course / "assignments/demo/assignment.toml"
    edit(manifest, "timeout_s = 60\n", "timeout_s = 60\npart_budget_s = 700\n")
    (problem,) = problems_of(course)
    assert problem.startswith(
        "[limits]: 1 part x part_budget_s 700 s = 700 s of student code per grade, more "
        "than grade_timeout_s 600 s"
    )
    edit(manifest, "part_budget_s = 700\n", "part_budget_s = 700\ngrade_timeout_s = 2400\n")
    assert problems_of(course) == []


# A metric test of scale(): 0.9 where the output equals the reference's on the seed's
# inputs, 0 elsewhere; LOW and HIGH are its thresholds, replaced per test.
METRIC_TEST = '''

@pytest.mark.counts_after("test_scale_matches_reference")
@pytest.mark.points(1)
def test_agreement(compare, seed, device, metric):
    """scale(x, f): agreement with the reference"""
    got, want = compare(
        probes.scale_probe, seed=seed, device=device, dtype="float64", shape=[6], factor=3.0
    )
    metric(0.9 * float(bool((got["y"] == want["y"]).all())), low=LOW, high=HIGH, name="agreement")
'''
WEAK_SCALE = "solutions/demo/weak/scale.py"


def with_metric_test(course: Path, *, low: float, high: float, weak: str | None) -> None:
    """The scaffolded suite plus METRIC_TEST, and `weak` as the weak model's scale.py."""
    test = METRIC_TEST.replace("LOW", str(low)).replace("HIGH", str(high))
    with (course / SCALE_TESTS).open("a") as handle:
        handle.write(test)
    if weak is not None:
        (course / WEAK_SCALE).parent.mkdir()
        (course / WEAK_SCALE).write_text(weak)


def validated(course: Path) -> tuple[Validation, list[str]]:
    lines: list[str] = []
    return validation_of("demo", say=lines.append), lines


def test_metric_thresholds_hold_on_three_seeds_with_a_weak_model_that_earns_nothing(
    course: Path,
) -> None:
    weak = "def scale(x, factor):\n    return x * (factor + 1)\n"
    with_metric_test(course, low=0.1, high=0.8, weak=weak)
    validation, lines = validated(course)
    assert validation.problems == []
    # The run-to-run figures, printed and in validate --report's JSON.
    assert lines[0] == (
        "demo: note: metric 'agreement' of 'scale(x, f): agreement with the reference' on seeds "
        "1, 2, 3: reference 0.9 / 0.9 / 0.9 (spread 0; full credit from 0.8, margin 0.0525); "
        "weak model 0 / 0 / 0 (no credit from 0.1)"
    )
    report = json.loads(json.dumps(validation_report([validation], device="cpu")))
    assert report["seeds"] == [1, 2, 3]
    assert report["assignments"]["demo"] == {
        "problems": [],
        "metrics": [
            {
                "test": "scale(x, f): agreement with the reference",
                "part": "scale",
                "metric": "agreement",
                "low": 0.1,
                "high": 0.8,
                "margin": 0.0525,
                "reference": {"1": 0.9, "2": 0.9, "3": 0.9},
                "spread": 0.0,
                "weak": {"1": 0.0, "2": 0.0, "3": 0.0},
            }
        ],
    }


def test_a_reference_within_the_margin_and_no_weak_model_are_named(course: Path) -> None:
    # 0.9 is above 0.88, but by less than the margin (7.5% of 0.78).
    with_metric_test(course, low=0.1, high=0.88, weak=None)
    validation, _ = validated(course)
    test = "metric test 'scale(x, f): agreement with the reference'"
    assert validation.problems == [
        *(
            f"{test}: on seed {seed} the reference's agreement is 0.9, not above the high "
            "threshold 0.88 by the margin 0.0585: a correct training that draws a less lucky "
            "seed would lose points; move the threshold, or make the reference's training better"
            for seed in (1, 2, 3)
        ),
        f"{test}: no weak model shows that its low threshold bites: put a weak version of "
        "scale.py (one that should earn nothing, such as the reference without its optimizer "
        "step) in solutions/demo/weak/",
    ]


def test_a_weak_model_that_earns_credit_is_named_with_its_seed_and_figure(course: Path) -> None:
    reference = (course / "solutions/demo/scale.py").read_text()
    with_metric_test(course, low=0.1, high=0.8, weak=reference)
    validation, _ = validated(course)
    assert validation.problems == [
        f"metric test 'scale(x, f): agreement with the reference': on seed {seed} the weak "
        "model (weak/scale.py) earns 100% of its points with agreement 0.9, beyond the low "
        "threshold 0.1: move the low threshold toward the reference's figures, or make the "
        "weak model one that should earn nothing"
        for seed in (1, 2, 3)
    ]
