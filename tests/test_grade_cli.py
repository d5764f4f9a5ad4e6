"""`python -m grader grade` from the outside: flags, exit codes, seeds and submission forms."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.course.manifest import load_assignment
from tests.support import PART_FILES, SOLUTIONS_DIR, grade_to_report, part_scores, run_grader_cli

POINTS = {part.id: part.points for part in load_assignment("pytorch_basics").parts}
SUBMISSIONS_DIR = Path(__file__).resolve().parent / "submissions"
# A submission with a bug in each of two parts, so that reproducing a run covers feedback too.
BUGGY_CASES = ("manual-backprop-no-relu-mask", "two-layer-net-relu-on-output")
SEED = "4242"

Graded = tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any]]

# Files that would sabotage grading if they were ever imported, collected or run.
HOSTILE_FILES = {
    "conftest.py": "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _sabotage():\n"
    "    raise RuntimeError('the submission conftest.py was collected')\n",
    "sitecustomize.py": "raise SystemExit('the submission sitecustomize.py ran')\n",
    "usercustomize.py": "raise SystemExit('the submission usercustomize.py ran')\n",
    "torch.py": "raise ImportError('the submission torch.py shadowed torch')\n",
    "probes.py": "raise ImportError('the submission probes.py shadowed the hidden probes')\n",
    "pytest.ini": "[pytest]\naddopts = --collect-only\n",
}
BROKEN_SOURCE = "def broken(:\n"


def _one_line_error(process: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert process.returncode == 2, process.stdout + process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    assert "Traceback" not in process.stdout + process.stderr


@pytest.mark.parametrize(
    ("flags", "phrases"),
    [
        pytest.param(["--device", "tpu"], ["--device", "tpu"], id="unknown-device"),
        pytest.param(["--seed", "abc"], ["--seed", "abc"], id="seed-not-a-number"),
        pytest.param(["--seed", "-5"], ["--seed", "-5"], id="negative-seed"),
        pytest.param(["-a", "no_such_assignment"], ["no_such_assignment"], id="unknown-assignment"),
        pytest.param(["--no-such-flag"], ["--no-such-flag"], id="unknown-flag"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    flags: list[str], phrases: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    process = run_grader_cli("grade", SOLUTIONS_DIR, "--report", report, *flags)
    _one_line_error(process, *phrases)
    assert not report.exists()


def test_missing_submission_argument_is_a_usage_error() -> None:
    _one_line_error(run_grader_cli("grade"), "submission")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_usage_error() -> None:
    process = run_grader_cli("grade", SOLUTIONS_DIR, "--device", "cuda")
    _one_line_error(process, "cuda")


@pytest.mark.slow
def test_nonexistent_submission_is_graded_zero_with_a_visible_reason(tmp_path: Path) -> None:
    """Grading finished (exit 0): both files say the submission could not be read."""
    missing = tmp_path / "no-such-folder"
    process, report, results = grade_to_report(missing, tmp_path, "-a", "pytorch_basics")
    assert process.returncode == 0, process.stderr
    assert report["score"] == 0
    assert part_scores(report) == dict.fromkeys(POINTS, 0.0)
    assert report["grader_error"] is None
    [notice] = report["tests"]
    assert notice["name"] == "Submission could not be read"
    assert str(missing) in notice["message"]
    [entry] = results["tests"]
    assert entry["visibility"] == "visible"
    assert str(missing) in entry["output"]
    assert results["score"] == 0


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """What a reproduced run must repeat: scores, outcomes, messages, seed, graded files."""
    return {
        "score": report["score"],
        "parts": report["parts"],
        "tests": [
            {key: test[key] for key in ("name", "part", "score", "max_score", "outcome", "message")}
            for test in report["tests"]
        ],
        "seed": report["seed"],
        "device": report["device"],
        "files": report["submission"]["files"],
        "sha256": report["submission"]["sha256"],
    }


def _buggy_folder(dest: Path) -> Path:
    """The reference with the bugs of BUGGY_CASES (each case holds only its changed files)."""
    dest.mkdir(parents=True)
    for name in PART_FILES:
        shutil.copy(SOLUTIONS_DIR / name, dest / name)
    for case in BUGGY_CASES:
        for path in (SUBMISSIONS_DIR / case).glob("*.py"):
            shutil.copy(path, dest / path.name)
    return dest


def _write_zip(zip_path: Path, entries: dict[str, bytes], links: dict[str, str]) -> Path:
    with zipfile.ZipFile(zip_path, "w") as archive:
        for name, data in entries.items():
            # A ZipInfo keeps the name exactly as given (no stripping of "/" or "..").
            archive.writestr(zipfile.ZipInfo(name), data)
        for name, target in links.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return zip_path


def _junk_zip(folder: Path, zip_path: Path) -> Path:
    """`folder`'s files inside one top folder, with what macOS and Python leave behind."""
    entries = {f"my-work/{path.name}": path.read_bytes() for path in sorted(folder.iterdir())}
    entries.update(
        {
            "__MACOSX/my-work/._manual_backprop.py": b"\x00\x05\x16\x07junk",
            "my-work/.DS_Store": b"\x00\x00\x00\x01Bud1",
            "my-work/__pycache__/manual_backprop.cpython-311.pyc": b"\x00junk",
            # As shallow as the real file and sorted before it: graded if junk were not skipped.
            "__MACOSX/two_layer_net.py": BROKEN_SOURCE.encode(),
            "__pycache__/two_layer_net.py": BROKEN_SOURCE.encode(),
        }
    )
    return _write_zip(zip_path, entries, {})


def _hostile_zip(zip_path: Path) -> Path:
    """The reference in a top folder, plus hostile files and unsafe entries that must be refused."""
    entries = {f"work/{name}": (SOLUTIONS_DIR / name).read_bytes() for name in PART_FILES}
    entries.update({f"work/{name}": text.encode() for name, text in HOSTILE_FILES.items()})
    entries.update({name: text.encode() for name, text in HOSTILE_FILES.items()})
    # Shallower than the real files, so each would be graded if it were not refused.
    entries["../manual_backprop.py"] = BROKEN_SOURCE.encode()
    entries["/tmp/autograd_loop.py"] = BROKEN_SOURCE.encode()
    entries["work/../../custom_sigmoid.py"] = BROKEN_SOURCE.encode()
    # As deep as the real file and sorted before it.
    links = {"a/device_benchmark.py": "/etc/passwd"}
    return _write_zip(zip_path, entries, links)


def _grade_built(
    build: Callable[[Path], Path], workdir: Path, environment: dict[str, str], *extra: str
) -> Graded:
    workdir.mkdir(parents=True)
    return grade_to_report(build(workdir), workdir, *extra, environment=environment)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Graded]]]:
    """Grade the submissions of this module's slow tests side by side (each takes seconds)."""
    root = tmp_path_factory.mktemp("grade-cli")
    buggy = _buggy_folder(root / "buggy")
    jobs: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
        "folder": (lambda _: buggy, ("--seed", SEED)),
        "folder-again": (lambda _: buggy, ("--seed", SEED)),
        "zip-with-junk": (lambda work: _junk_zip(buggy, work / "submission.zip"), ("--seed", SEED)),
        # No --seed: the grader draws one and records it.
        "hostile-zip": (lambda work: _hostile_zip(work / "submission.zip"), ()),
    }
    environment = os.environ.copy()  # read in pytest's thread (see run_grader_cli)
    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 2) + 1) as pool:
        yield {
            name: pool.submit(_grade_built, build, root / name, environment, *extra)
            for name, (build, extra) in jobs.items()
        }


def _finished(graded: Graded) -> dict[str, Any]:
    process, report, _ = graded
    assert process.returncode == 0, process.stderr[-3000:]
    assert report["grader_error"] is None, report["grader_error"]
    return report


@pytest.mark.slow
def test_same_seed_reproduces_the_report(graded: dict[str, Future[Graded]]) -> None:
    first = _finished(graded["folder"].result())
    second = _finished(graded["folder-again"].result())
    assert first["seed"] == second["seed"] == int(SEED)
    assert _comparable(first) == _comparable(second)
    # The bugs are there, so the messages compared above carry real numbers.
    assert first["parts"]["manual_backprop"]["score"] < POINTS["manual_backprop"]
    assert first["parts"]["two_layer_net"]["score"] < POINTS["two_layer_net"]


@pytest.mark.slow
def test_a_gated_pass_is_reported_as_not_counted_yet_in_every_output(
    graded: dict[str, Future[Graded]],
) -> None:
    """Both buggy parts have checks that pass but wait for their broken function's tests."""
    process, report, results = graded["folder"].result()
    _finished((process, report, results))
    waiting = [t for t in report["tests"] if t.get("waits_for")]
    assert {t["part"] for t in waiting} == {"manual_backprop", "two_layer_net"}
    assert all(t["outcome"] == "passed" and t["score"] == 0 < t["max_score"] for t in waiting)
    gradescope = {t["name"]: t for t in results["tests"]}
    for test in waiting:
        assert gradescope[test["name"]]["output"].startswith(
            f"Passed, not counted yet (waits for {test['waits_for']})."
        )
    # The table counts the passes that count, and the waiting ones apart.
    said = " ".join(process.stdout.split())
    for part in ("manual_backprop", "two_layer_net"):
        tests = [t for t in report["tests"] if t["part"] == part]
        held = sum(t in waiting for t in tests)
        counted = sum(t["outcome"] == "passed" for t in tests) - held
        assert f"{counted}/{len(tests)} (+{held} not counted yet)" in said
    assert said.count("passed, not counted yet (waits for") == len(waiting)
    # What each waits for is named once: on its waiting line, not again in its message.
    for test in waiting:
        for name in test["waits_for"].split("'")[1::2]:
            assert f"'{name}'" not in test["message"], test
    # A pass that counts carries no such field: a report reader sees the old shape.
    assert all("waits_for" not in t for t in report["tests"] if t not in waiting)


@pytest.mark.slow
def test_zip_with_top_folder_and_junk_grades_like_the_folder(
    graded: dict[str, Future[Graded]],
) -> None:
    folder = _finished(graded["folder"].result())
    archive = _finished(graded["zip-with-junk"].result())
    assert archive["submission"]["files"] == sorted(PART_FILES)
    # Same files graded (the hash covers their content), same seed, same results.
    assert _comparable(archive) == _comparable(folder)


@pytest.mark.slow
def test_hostile_files_and_unsafe_entries_are_ignored(
    graded: dict[str, Future[Graded]],
) -> None:
    hostile = graded["hostile-zip"].result()
    process, report, results = hostile
    _finished(hostile)
    assert part_scores(report) == pytest.approx(POINTS, abs=1e-4), [
        (test["name"], test["message"][:300])
        for test in report["tests"]
        if test["outcome"] not in ("passed", "skipped")
    ]
    assert report["submission"]["files"] == sorted(PART_FILES)
    notes = "\n".join(report["submission"]["notes"])
    for entry in ("../manual_backprop.py", "/tmp/autograd_loop.py", "work/../../custom_sigmoid.py"):
        assert f"unsafe archive entry {entry!r}" in notes, notes
    assert "link 'a/device_benchmark.py'" in notes, notes
    # The notes reach the student in results.json too.
    assert "../manual_backprop.py" in results["output"]
    # Without --seed the grader draws one and records it, so the run can be reproduced.
    assert isinstance(report["seed"], int)
    assert results["extra_data"]["seed"] == report["seed"]
    assert f"seed {report['seed']}" in process.stdout
    for part in POINTS:
        assert part in process.stdout
