"""What `batch` gives course staff: why tests failed, the wrong answers submissions share, code
similarity, per-student pages and the Canvas gradebook.

The end-to-end tests share one small class graded once (a module fixture): copies of the
reference with injected bugs, two groups of identical wrong answers, a syntax error, a
missing file, a crash, and a copied pair (renamed variables, reordered functions).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.batch.discovery import BatchItem
from grader.batch.gradebook import CANVAS_COLUMNS, CANVAS_POINTS_ROW, canvas_gradebook
from grader.batch.metadata import Submitter
from grader.batch.run import BatchOptions, run_batch
from grader.batch.similarity import SimilarPair, side_by_side_html, similarity_html
from grader.batch.stats import MistakeCluster, summarize
from grader.batch.summary import summary_html
from grader.course.manifest import load_assignment
from grader.errors import UsageError
from grader.grading.causes import (
    CRASHED,
    DOES_NOT_COMPILE,
    LIMIT_EXCEEDED,
    MISSING_FILE,
    TIMEOUT,
    WRONG_ANSWER,
    combine_fingerprints,
    output_fingerprint,
    report_test_cause,
    student_failure_cause,
)
from grader.results.model import PartResult, TestResult, points
from grader.results.report import Report, report_from_dict
from tests.support import COURSE_ROOT, PART_FILES, SOLUTIONS_DIR, run_grader_cli

ASSIGNMENT = load_assignment("pytorch_basics")
PARTS = tuple(part.id for part in ASSIGNMENT.parts)
POINTS = {part.id: part.points for part in ASSIGNMENT.parts}
CORPUS = COURSE_ROOT / "tests" / "submissions"
STARTER = COURSE_ROOT / "assignments" / "pytorch_basics"
SEED = 777


def typed(reports: dict[str, dict[str, Any] | None]) -> dict[str, Report | None]:
    """The reports as the batch holds them, read back from report.json's data."""
    return {key: None if data is None else report_from_dict(data) for key, data in reports.items()}


# -- causes and fingerprints (fast) ----------------------------------------------------------


def test_student_failures_are_classified_from_what_the_grader_knows() -> None:
    def cause(outcome: str = "error", message: str = "", **known: Any) -> str:
        facts: dict[str, Any] = {"file_present": True, "source": "file", "problem": None}
        return student_failure_cause(outcome, message, **{**facts, **known})

    assert cause("timeout", "Stopped after 60 s") == TIMEOUT
    assert cause(file_present=False, source="missing") == MISSING_FILE
    assert cause(problem="line 3: invalid syntax") == DOES_NOT_COMPILE
    assert cause(file_present=False, problem="not valid UTF-8") == DOES_NOT_COMPILE
    oversized = "x.py is 900 KiB, over the 512 KiB limit for a source file."
    assert cause(file_present=False, problem=oversized) == LIMIT_EXCEEDED
    assert cause(message="Your code ran out of memory (limit 3072 MB).") == LIMIT_EXCEEDED
    assert cause(message="Your code used 9000 MB of GPU memory and was stopped") == LIMIT_EXCEEDED
    assert cause(message="Your code was killed (most often for using too much memory") == (
        LIMIT_EXCEEDED
    )
    # A student's exception text comes after "Your code raised": it cannot fake a limit.
    assert cause(message="Your code raised ValueError: Your code used 1 MB") == CRASHED
    # Reports without a recorded cause (older ones) are classified from their outcome.
    failed = TestResult("t", "p", "failed", weight=1.0)
    errored = TestResult("t", "p", "error", weight=1.0)
    assert report_test_cause(failed, None) == WRONG_ANSWER
    missing = PartResult("p", "p.py", 0, 1, source="missing")
    assert report_test_cause(errored, missing) == MISSING_FILE
    bogus = TestResult("t", "p", "error", weight=1.0, cause="bogus")
    assert report_test_cause(bogus, PartResult("p", "p.py", 0, 1)) == CRASHED


def test_fingerprints_equal_for_the_same_rounded_outputs() -> None:
    values = torch.tensor([[1.0, -2.5], [3.25, 0.0]], dtype=torch.float64)
    same = {"grad": values + 1e-9, "loss": 0.30000001}
    assert output_fingerprint({"grad": values, "loss": 0.3}) == output_fingerprint(same)
    assert output_fingerprint(values) == output_fingerprint(values.clone() * -1 * -1)
    assert output_fingerprint(torch.tensor([0.0])) == output_fingerprint(torch.tensor([-0.0]))
    assert output_fingerprint(values) != output_fingerprint(values.T)
    assert output_fingerprint(values) != output_fingerprint(values.float())
    assert output_fingerprint([1.0, 2.0]) != output_fingerprint([1.0, 2.01])
    assert combine_fingerprints([]) == "" and combine_fingerprints(["a", ""]) == ""


FINGERPRINT_PEAK = """
import json, resource, sys, torch
from grader.grading.causes import output_fingerprint
huge = torch.linspace(-3, 3, 48_000_000, dtype=torch.float16)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fingerprint = output_fingerprint(huge)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_mb": (after - before) / 1024, "same": fingerprint == output_fingerprint(
    huge.clone()), "flipped_differs": fingerprint != output_fingerprint(huge.flip(0))}))
"""


def test_a_huge_student_tensor_is_fingerprinted_in_bounded_memory() -> None:
    # The grading process fingerprints every compared output: 96 MB of float16, rounded whole
    # in float64 and int64, took it from 330 MB to past a GiB.
    process = subprocess.run(
        [sys.executable, "-c", FINGERPRINT_PEAK],
        cwd=COURSE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    measured = json.loads(process.stdout)
    assert measured["same"] and measured["flipped_differs"]
    assert measured["grew_mb"] < 96, measured


def failing(part: str, name: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"part": part, "name": name, "outcome": outcome, "message": f"{name} bad", **extra}


def report_of(tests: list[dict[str, Any]], **parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "assignment": ASSIGNMENT.id,
        "score": 10.0,
        "max_score": ASSIGNMENT.max_score,
        "parts": {p: {"score": 1.0, "max_score": POINTS[p], **parts.get(p, {})} for p in PARTS},
        "tests": tests,
        "seed": 1,
        "submission": {"sha256": "x", "files": list(PART_FILES)},
        "grader_error": None,
    }


def test_summary_counts_wrong_answers_apart_from_other_causes() -> None:
    wrong = failing("manual_backprop", "grads", "failed", cause=WRONG_ANSWER, fingerprint="f1")
    reports: dict[str, dict[str, Any] | None] = {
        "a": report_of([wrong]),
        "b": report_of([wrong]),
        "c": report_of([{**wrong, "fingerprint": "f2"}]),
        "d": report_of(
            [
                failing("manual_backprop", "grads", "error", cause=DOES_NOT_COMPILE),
                failing("manual_backprop", "loop", "error", cause=DOES_NOT_COMPILE),
            ]
        ),
        "e": report_of(
            [failing("manual_backprop", "grads", "error")], manual_backprop={"source": "missing"}
        ),
    }
    items = [BatchItem(key, Path(key)) for key in reports]
    summary = summarize(ASSIGNMENT, items, typed(reports))
    assert [(t.name, t.failures) for t in summary.failed_tests] == [("grads", 3)]
    backprop = summary.causes[0]
    assert backprop.part == "manual_backprop"
    assert backprop.submissions[WRONG_ANSWER] == 3
    assert backprop.submissions[DOES_NOT_COMPILE] == 1  # one submission, two tests
    assert backprop.submissions[MISSING_FILE] == 1
    [cluster] = summary.clusters
    assert (cluster.name, cluster.submissions) == ("grads", ("a", "b"))
    assert cluster.message == "grads bad"


def test_canvas_rows_follow_the_import_layout() -> None:
    items = [
        BatchItem("g1", Path("g1"), (Submitter("Ada", "ada@x.edu", "100"), Submitter("Bo"))),
        BatchItem("solo", Path("solo")),
        BatchItem("crashed", Path("crashed"), (Submitter("=1+1", "c@x.edu", "7"),)),
    ]
    reports: dict[str, dict[str, Any] | None] = {
        "g1": report_of([]) | {"score": 82.777778},
        "solo": report_of([]),
        "crashed": report_of([]) | {"grader_error": "worker died"},
    }
    canvas = canvas_gradebook(items, typed(reports), ASSIGNMENT)
    rows = canvas.rows
    assert rows[0] == [*CANVAS_COLUMNS, ASSIGNMENT.title]
    assert rows[1] == [CANVAS_POINTS_ROW, "", "", "", "", "100"]
    body = {row[0]: row for row in rows[2:]}
    assert body["Ada"] == ["Ada", "", "100", "ada@x.edu", "", "82.78"]
    assert body["Bo"][-1] == "82.78"  # each member of a group gets the group's score
    assert body["solo"][-1] == "10"
    assert body["'=1+1"][-1] == ""  # a grader error leaves the grade alone
    assert canvas.warnings == ()


@pytest.mark.parametrize("hidden", ["\u200b", "\ufeff", "\u2060", "\u00ad", "\u200e", " \u3000"])
def test_a_formula_behind_invisible_characters_is_defused_too(hidden: str) -> None:
    name = f'{hidden}=HYPERLINK("http://x.example")'
    items = [BatchItem("s", Path("s"), (Submitter(name, f"{hidden}+cmd", "7"),))]
    canvas = canvas_gradebook(items, typed({"s": report_of([])}), ASSIGNMENT)
    assert canvas.rows[2][0] == f"'{name}" and canvas.rows[2][3] == f"'{hidden}+cmd"
    # Canvas would look the student up by "'+cmd": staff are told it will not match.
    [warning] = canvas.warnings
    assert warning.startswith("s: its SIS Login ID") and "will not find the student" in warning
    # Text that merely contains such characters is left as it is.
    plain = [BatchItem("s", Path("s"), (Submitter(f"Ana{hidden}Lee"),))]
    rows = canvas_gradebook(plain, typed({"s": report_of([])}), ASSIGNMENT).rows
    assert rows[2][0] == f"Ana{hidden}Lee"


@pytest.mark.parametrize(
    ("name", "cell"),
    [
        ("Points Possible", "Points_Possible"),
        ("    Points Possible", "    Points_Possible"),
        ("Ada (Points Possible)", "Ada (Points_Possible)"),
        ("points\u00a0 POSSIBLE", "points_POSSIBLE"),
        ("=Points Possible", "'=Points_Possible"),
    ],
)
def test_a_name_canvas_reads_as_the_points_row_imports_as_the_students_row(
    name: str, cell: str
) -> None:
    items = [BatchItem("s", Path("s"), (Submitter(name, "s@x.edu", "9"),))]
    canvas = canvas_gradebook(items, typed({"s": report_of([])}), ASSIGNMENT)
    assert canvas.rows[2] == [cell, "", "9", "s@x.edu", "", "10"]
    # Canvas's own test: the first cell holds "Points Possible" (GradebookImporter).
    assert [row[0] for row in canvas.rows if "Points Possible" in row[0]] == [CANVAS_POINTS_ROW]
    [warning] = canvas.warnings
    assert warning.startswith("s: the name") and repr(cell) in warning


def test_an_identity_on_two_submissions_leaves_all_its_rows_unscored() -> None:
    items = [
        BatchItem("a", Path("a"), (Submitter("Ada", "ada@x.edu", "100"),)),
        # Claims Ada's SIS id with another login; Bo, in the same group, keeps his score.
        BatchItem("b", Path("b"), (Submitter("Eve", "eve@x.edu", "100"), Submitter("Bo"))),
        # Ada's login in another case, with no SIS id.
        BatchItem("c", Path("c"), (Submitter("Cy", "ADA@x.edu"),)),
        # "1,5" and "1.5" are the same SIS id to Canvas's number converter.
        BatchItem("d", Path("d"), (Submitter("Di", "", "1,5"),)),
        BatchItem("e", Path("e"), (Submitter("Ed", "", "1.5"),)),
        # No ids: Canvas matches by name, and two rows name the same student.
        BatchItem("f", Path("f"), (Submitter("Fay"),)),
        BatchItem("g", Path("g"), (Submitter("fay"),)),
        # One submission naming the same person twice is one claim, not two.
        BatchItem("h", Path("h"), (Submitter("Hal", "", "7"), Submitter("Hal", "", "7"))),
        BatchItem("i", Path("i"), (Submitter("Ida", "ida@x.edu", "8"),)),
    ]
    reports = typed({key: report_of([]) for key in "abcdefghi"})
    canvas = canvas_gradebook(items, reports, ASSIGNMENT)
    scores = [(row[0], row[-1]) for row in canvas.rows[2:]]
    assert scores == [
        ("Ada", ""),
        ("Eve", ""),
        ("Bo", "10"),
        ("Cy", ""),
        ("Di", ""),
        ("Ed", ""),
        ("Fay", ""),
        ("fay", ""),
        ("Hal", "10"),
        ("Hal", "10"),
        ("Ida", "10"),
    ]
    assert [w.split(" is claimed by ")[0] for w in canvas.warnings] == [
        "SIS User ID '100'",
        "SIS Login ID 'ada@x.edu'",
        "SIS User ID '1,5'",
        "Student 'Fay'",
    ]
    assert "2 submissions (a, b)" in canvas.warnings[0]
    assert "2 submissions (a, c)" in canvas.warnings[1]


def test_a_students_page_shows_a_waiting_pass_apart() -> None:
    from grader.batch.summary import student_html

    tests = [
        {"name": "loss", "part": "manual_backprop", "outcome": "passed", "score": 2.0,
         "max_score": 2.0},
        {"name": "no <autograd>", "part": "manual_backprop", "outcome": "passed", "score": 0.0,
         "max_score": 2.0, "waits_for": "'grads & more'"},
    ]  # fmt: skip
    page = student_html("s", "Ada", typed({"s": report_of(tests)})["s"])
    assert "<h3 class=pass>manual_backprop · loss: passed (2 / 2)</h3>" in page
    assert (
        "<h3 class=wait>manual_backprop · no &lt;autograd&gt;: passed, not counted yet "
        "(waits for &#x27;grads &amp; more&#x27;) (0 / 2)</h3>"
    ) in page


def test_missing_ray_is_reported_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # `import ray` fails
    out = tmp_path / "out"
    console = Console(file=io.StringIO(), width=100)
    options = BatchOptions(
        root=tmp_path / "nowhere", out_dir=out, csv_path=out / "g.csv", workers=1, executor="ray"
    )
    with pytest.raises(UsageError, match=r"install -e '\.\[ray\]'"):
        run_batch(options, ASSIGNMENT, console)
    assert not out.exists()
    assert console.file.getvalue() == ""  # type: ignore[attr-defined]


# -- a small class, end to end ---------------------------------------------------------------

# The reference custom_sigmoid.py rewritten by a student who copied it: local names changed
# (the contract fixes the public ones), the training loop moved above `sigmoid`, comments
# and docstrings dropped.
COPIED_SIGMOID = """\
from __future__ import annotations

import torch


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(context: torch.autograd.function.FunctionCtx, t: torch.Tensor) -> torch.Tensor:
        ex = torch.exp(-t.abs())
        saved = torch.where(t >= 0, 1.0 / (1.0 + ex), ex / (1.0 + ex))
        context.save_for_backward(saved)
        return saved

    @staticmethod
    def backward(
        context: torch.autograd.function.FunctionCtx, upstream: torch.Tensor
    ) -> torch.Tensor:
        (saved,) = context.saved_tensors
        return upstream * saved * (1.0 - saved)


def train_sigmoid_net(
    inputs: torch.Tensor,
    targets: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    history: list[float] = []
    for _ in range(steps):
        prediction = sigmoid(inputs @ first) @ second
        err = ((prediction - targets) ** 2).sum()
        history.append(err.item())
        err.backward()
        with torch.no_grad():
            first -= learning_rate * first.grad
            second -= learning_rate * second.grad
            first.grad.zero_()
            second.grad.zero_()
    return history


def sigmoid(t: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = Sigmoid.apply(t)
    return out
"""


@dataclass(frozen=True)
class SmallClass:
    out: Path
    result: Any
    summary: dict[str, Any]
    reports: dict[str, dict[str, Any]]


def build_small_class(root: Path) -> None:
    """Ten submissions; custom_sigmoid is the starter stub except in the copied pair."""

    def student(key: str, replace: dict[str, str | None]) -> None:
        folder = root / key
        folder.mkdir(parents=True)
        for name in PART_FILES:
            source = STARTER / name if name == "custom_sigmoid.py" else SOLUTIONS_DIR / name
            shutil.copy(source, folder / name)
        for name, text in replace.items():
            if text is None:
                (folder / name).unlink()
            else:
                (folder / name).write_text(text)

    def corpus(case: str, name: str) -> str:
        return (CORPUS / case / name).read_text()

    w1 = corpus("manual-backprop-grad-w1-transposed", "manual_backprop.py")
    relu = corpus("two-layer-net-relu-on-output", "two_layer_net.py")
    student("copy_a", {"custom_sigmoid.py": (SOLUTIONS_DIR / "custom_sigmoid.py").read_text()})
    student("copy_b", {"custom_sigmoid.py": COPIED_SIGMOID})
    for key in ("w1_a", "w1_b", "w1_c"):
        student(key, {"manual_backprop.py": w1})
    for key in ("relu_a", "relu_b"):
        student(key, {"two_layer_net.py": relu})
    student("syntax", {"two_layer_net.py": "def broken(:\n    pass\n"})
    student("missing", {"dataloader_training.py": None})
    student(
        "exits",
        {"dataloader_training.py": corpus("dataloader-evaluate-calls-sys-exit", PART_FILES[4])},
    )


@pytest.fixture(scope="module")
def small_class(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmallClass]:
    base = tmp_path_factory.mktemp("staff")
    root, out = base / "submissions", base / "out"
    build_small_class(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TEST_TIMEOUT_S", "20")
        result = run_grader_cli("batch", root, "--out", out, "--workers", "2", "--seed", str(SEED))
    assert result.returncode == 0, result.stdout + result.stderr
    reports = {
        path.parent.name: json.loads(path.read_text()) for path in out.glob("reports/*/report.json")
    }
    summary = json.loads((out / "summary.json").read_text())
    yield SmallClass(out, result, summary, reports)


@pytest.mark.slow
def test_identical_wrong_answers_are_grouped(small_class: SmallClass) -> None:
    clusters = {(c["part"], tuple(c["submissions"])): c for c in small_class.summary["clusters"]}
    w1 = [c for (part, members), c in clusters.items() if members == ("w1_a", "w1_b", "w1_c")]
    relu = [c for (part, members), c in clusters.items() if members == ("relu_a", "relu_b")]
    assert w1 and all(c["part"] == "manual_backprop" for c in w1)
    assert relu and all(c["part"] == "two_layer_net" for c in relu)
    assert all(c["message"] for c in w1 + relu)
    # Nobody else returned those wrong values: no cluster mixes in other submissions.
    for cluster in small_class.summary["clusters"]:
        assert set(cluster["submissions"]) in (
            {"w1_a", "w1_b", "w1_c"},
            {"relu_a", "relu_b"},
        )
    page = (small_class.out / "summary.html").read_text()
    assert "3 submissions returned the same wrong" in page
    assert "2 submissions returned the same wrong" in page


# Each submission's total as `grade` gives it alone (the workers' reference-output cache
# must not change a score). `relu_*` lose the checks that wait for the broken function too
# (the structure with the forward); `exits` loses evaluate's only (make_loader and
# train_with_loader have seeded tests of their own).
EXPECTED_TOTALS = {
    "copy_a": 100,
    "copy_b": 100,
    "exits": 75,
    "missing": 65,
    "relu_a": 70,
    "relu_b": 70,
    "syntax": 60,
    "w1_a": 69,
    "w1_b": 69,
    "w1_c": 69,
}


@pytest.mark.slow
def test_every_submission_gets_the_score_grade_gives_it(small_class: SmallClass) -> None:
    totals = {key: report["score"] for key, report in small_class.reports.items()}
    assert totals == pytest.approx(EXPECTED_TOTALS, abs=0.01)


@pytest.mark.slow
def test_failures_are_counted_by_cause(small_class: SmallClass) -> None:
    causes = {c["part"]: c["submissions"] for c in small_class.summary["causes"]}
    assert causes["manual_backprop"][WRONG_ANSWER] == 3
    assert causes["two_layer_net"][WRONG_ANSWER] == 2
    assert causes["two_layer_net"][DOES_NOT_COMPILE] == 1
    assert causes["dataloader_training"][MISSING_FILE] == 1
    assert causes["dataloader_training"][CRASHED] == 1
    # The stub raises NotImplementedError: a crash, not a wrong answer.
    assert causes["custom_sigmoid"][CRASHED] == 8
    assert causes["custom_sigmoid"][WRONG_ANSWER] == 0
    wrong_parts = {t["part"] for t in small_class.summary["failed_tests"]}
    assert wrong_parts == {"manual_backprop", "two_layer_net"}
    syntax = small_class.reports["syntax"]
    assert {t.get("cause") for t in syntax["tests"] if t["part"] == "two_layer_net"} == {
        DOES_NOT_COMPILE
    }


@pytest.mark.slow
def test_canvas_gradebook_matches_the_reports(small_class: SmallClass) -> None:
    text = (small_class.out / "gradebook-canvas.csv").read_text()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [*CANVAS_COLUMNS, ASSIGNMENT.title]
    assert rows[1][0] == CANVAS_POINTS_ROW
    body = {row[0]: row for row in rows[2:]}
    assert set(body) == set(small_class.reports)
    for key, report in small_class.reports.items():
        assert float(body[key][5]) == pytest.approx(report["score"], abs=0.005)
    plain = list(csv.DictReader(io.StringIO((small_class.out / "gradebook.csv").read_text())))
    assert all(len(row["total"].partition(".")[2]) <= 2 for row in plain)


@pytest.mark.slow
def test_every_row_links_to_a_page_with_the_full_feedback(small_class: SmallClass) -> None:
    page = (small_class.out / "summary.html").read_text()
    for key, report in small_class.reports.items():
        assert f'href="students/{key}.html"' in page
        student = (small_class.out / "students" / f"{key}.html").read_text()
        for test in report["tests"]:
            if test["outcome"] != "passed" and test["message"]:
                first = test["message"].splitlines()[0]
                assert first.replace("&", "&amp;").replace("<", "&lt;")[:60] in student.replace(
                    "&#x27;", "'"
                ).replace("&quot;", '"')
    # relu_a's forward is wrong: its structure check passes but waits, and its page says so.
    waiting = [t for t in small_class.reports["relu_a"]["tests"] if t.get("waits_for")]
    assert waiting
    relu = (small_class.out / "students" / "relu_a.html").read_text().replace("&#x27;", "'")
    for test in waiting:
        assert f"passed, not counted yet (waits for {test['waits_for']})" in relu
    assert relu.count("<h3 class=wait>") == len(waiting)


@pytest.mark.slow
def test_the_copied_pair_ranks_first_in_its_part(small_class: SmallClass) -> None:
    data = json.loads((small_class.out / "similarity.json").read_text())
    sigmoid = [p for p in data["pairs"] if p["part"] == "custom_sigmoid"]
    # The others hand in the starter file there: all boilerplate, never similar.
    assert [(p["first"], p["second"]) for p in sigmoid] == [("copy_a", "copy_b")]
    assert min(sigmoid[0]["first_share"], sigmoid[0]["second_share"]) > 0.5
    # Identical files rank at the top; every listed pair has its side-by-side page.
    scores = [max(p["first_share"], p["second_share"]) for p in data["pairs"]]
    assert scores == sorted(scores, reverse=True)
    page = (small_class.out / sigmoid[0]["page"]).read_text()
    assert "<mark>" in page and "copy_a" in page and "copy_b" in page
    summary = (small_class.out / "summary.html").read_text()
    assert sigmoid[0]["page"] in summary and "side by side" in summary


# Gradescope's export metadata as it comes: the names and ids are what students typed or
# what the roster holds, so a student may be called "Points Possible" and two submissions may
# claim one SIS id.
HOSTILE_IDENTITIES = """\
submission_1:
  :submitters:
  - :name: Points Possible
    :sid: '100'
    :email: pp@example.edu
submission_2:
  :submitters:
  - :name: Ada Lovelace
    :sid: '200'
    :email: ada@example.edu
  - :name: Bo Group
    :sid: '300'
    :email: bo@example.edu
submission_3:
  :submitters:
  - :name: "=Eve"
    :sid: '200'
    :email: eve@example.edu
"""


@pytest.mark.slow
def test_canvas_import_of_hostile_names_and_a_shared_sis_id(tmp_path: Path) -> None:
    export = tmp_path / "export"
    for key in ("submission_1", "submission_2", "submission_3"):
        (export / key).mkdir(parents=True)
        shutil.copy(SOLUTIONS_DIR / "custom_sigmoid.py", export / key)
    (export / "submission_metadata.yml").write_text(HOSTILE_IDENTITIES)
    out = tmp_path / "out"
    result = run_grader_cli(
        "batch", export, "--out", out, "--workers", "1", "--seed", str(SEED), "--no-similarity"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with (out / "gradebook-canvas.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    sigmoid = points(POINTS["custom_sigmoid"])
    assert rows == [
        [*CANVAS_COLUMNS, ASSIGNMENT.title],
        [CANVAS_POINTS_ROW, "", "", "", "", points(ASSIGNMENT.max_score)],
        ["Points_Possible", "", "100", "pp@example.edu", "", sigmoid],
        ["Ada Lovelace", "", "200", "ada@example.edu", "", ""],
        ["Bo Group", "", "300", "bo@example.edu", "", sigmoid],
        ["'=Eve", "", "200", "eve@example.edu", "", ""],
    ]
    said = " ".join(result.stdout.split())
    assert "SIS User ID '200' is claimed by 2 submissions (submission_2, submission_3)" in said
    assert "submission_1: the name 'Points Possible'" in said
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["gradebook_warnings"]) == 2
    assert "Check before importing" in (out / "summary.html").read_text()
    # The staff gradebook keeps every score: only the Canvas import holds them back.
    with (out / "gradebook.csv").open(newline="") as handle:
        staff = {row["submission"]: row for row in csv.DictReader(handle)}
    assert {key: row["total"] for key, row in staff.items()} == dict.fromkeys(staff, sigmoid)
    assert staff["submission_3"]["student"] == "'=Eve"


def test_no_similarity_skips_it(tmp_path: Path) -> None:
    from grader.batch.run import _similarity

    pairs, note = _similarity([], ASSIGNMENT, tmp_path, enabled=False)
    assert pairs is None and "--no-similarity" in note
    assert not (tmp_path / "similarity").exists()


def test_the_grading_stamp_follows_the_solutions_and_hidden_tests(tmp_path: Path) -> None:
    import dataclasses

    from grader.batch.resume import grading_stamp, is_up_to_date

    solutions = tmp_path / "solutions"
    shutil.copytree(ASSIGNMENT.solutions_dir, solutions)
    copy = dataclasses.replace(ASSIGNMENT, solutions_dir=solutions)
    stamp = grading_stamp(copy)
    assert stamp == grading_stamp(copy) and stamp["grader_version"]
    (solutions / "__pycache__").mkdir(exist_ok=True)
    (solutions / "__pycache__" / "x.pyc").write_bytes(b"noise")
    assert grading_stamp(copy) == stamp
    hidden = solutions / "hidden_tests" / "test_manual_backprop.py"
    hidden.write_text(hidden.read_text() + "\n# a fix\n")
    changed = grading_stamp(copy)
    assert changed["solutions_sha256"] != stamp["solutions_sha256"]
    report = report_of([]) | {"device": "cpu", **stamp}
    same: dict[str, Any] = {"assignment": copy, "seed": 1, "device": "auto", "fingerprint": "x"}
    stamped = report_from_dict(report)
    assert is_up_to_date(stamped, **same, stamp=stamp)
    assert not is_up_to_date(stamped, **same, stamp=changed)
    assert not is_up_to_date(stamped, **same, stamp={**stamp, "grader_version": "9.9"})


@pytest.mark.slow
def test_a_rerun_after_a_fix_regrades_only_the_affected_and_diffs_them(
    small_class: SmallClass,
) -> None:
    """Two reports stamped by an "older reference" (one of them with other scores) are
    graded again, with the batch's seed; the others are kept; the changes are listed."""
    out = small_class.out
    paths = {key: out / "reports" / key / "report.json" for key in small_class.reports}
    for key in ("w1_a", "relu_a"):
        report = json.loads(paths[key].read_text())
        report["solutions_sha256"] = "graded-before-the-fix"
        if key == "w1_a":
            report["score"] += 11.0
            report["parts"]["manual_backprop"]["score"] = 20.0
        paths[key].write_text(json.dumps(report))
    kept = {k: p.stat().st_mtime_ns for k, p in paths.items() if k not in ("w1_a", "relu_a")}
    result = run_grader_cli(
        "batch", out.parent / "submissions", "--out", out, "--workers", "2", "--no-similarity"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert {k: p.stat().st_mtime_ns for k, p in paths.items() if k in kept} == kept
    for key in ("w1_a", "relu_a"):
        report = json.loads(paths[key].read_text())
        assert report["seed"] == SEED and report["solutions_sha256"] != "graded-before-the-fix"
        assert report["score"] == pytest.approx(small_class.reports[key]["score"])
    rows = list(csv.DictReader(io.StringIO((out / "regrade-diff.csv").read_text())))
    assert [row["submission"] for row in rows] == ["relu_a", "w1_a"]
    assert rows[0]["change"] == "0" and rows[0]["parts changed"] == ""
    assert float(rows[1]["change"]) == pytest.approx(-11.0)
    assert rows[1]["parts changed"] == "manual_backprop: 20 -> 9"
    assert "regraded w1_a: 80 -> 69 (-11) [manual_backprop 20 -> 9]" in result.stdout
    assert "regraded relu_a" not in result.stdout


@pytest.mark.slow
def test_a_notebook_student_s_page_links_their_notebook_rendered_inert(tmp_path: Path) -> None:
    """Staff see what a notebook student saw, with nothing in it that runs."""
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    notebook = json.loads(
        (COURSE_ROOT / "assignments" / "pytorch_losses" / "walkthrough.ipynb").read_text()
    )
    notebook["cells"].append(
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": "<img src=x onerror=alert(1)> <a href='javascript:alert(2)'>link</a>",
        }
    )
    (submissions / "alice.ipynb").write_text(json.dumps(notebook))
    shutil.copytree(COURSE_ROOT / "solutions" / "pytorch_losses", submissions / "bob")
    out = tmp_path / "out"
    process = run_grader_cli(
        *("batch", submissions, "-a", "pytorch_losses", "--out", out, "--workers", "1"),
        "--no-similarity",
        timeout=600,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    page = (out / "students" / "alice.notebook.html").read_text()
    assert "Content-Security-Policy" in page
    assert "onerror" not in page and "javascript:" not in page
    assert "alice.notebook.html" in (out / "students" / "alice.html").read_text()
    assert not (out / "students" / "bob.notebook.html").exists()
    assert "notebook.html" not in (out / "students" / "bob.html").read_text()


def test_summary_names_students_beside_their_submission_keys() -> None:
    """Gradescope's export names folders by submission id: staff read who it is."""
    names = {"submission_101": "Ada <b>Lovelace</b>", "bob": "bob"}
    pairs = [SimilarPair("custom_sigmoid", "submission_101", "bob", 0.9, 0.8, page="p.html")]
    table = similarity_html(pairs, "", names)
    assert "Ada &lt;b&gt;Lovelace&lt;/b&gt; (submission_101)" in table
    assert "<td>bob</td>" in table  # a key that is the name already is shown once
    code = types.SimpleNamespace(raw_code="x = 1")
    side = side_by_side_html(pairs[0], code, code, ((), ()), ((), ()), names)
    assert "<h2>Ada &lt;b&gt;Lovelace&lt;/b&gt; (submission_101)</h2>" in side
    cluster = MistakeCluster(
        "manual_backprop", "gradients", "f", ("submission_101", "carol"), "differs", 2
    )
    summary = dataclasses.replace(summarize(ASSIGNMENT, [], {}), clusters=(cluster,))
    page = summary_html(summary, [], names=names)
    assert ">Ada &lt;b&gt;Lovelace&lt;/b&gt; (submission_101)</a>, <a" in page
    assert ">carol</a>" in page
