"""`python -m grader batch`: discovery, gradebook, summary, and a class of 30 end to end.

The end-to-end tests share one class of submissions built in tmp_path from the reference
files with small mutations (correct, buggy, broken, hostile), graded once by a batch that is
interrupted twice (its workers killed, then the whole command killed) and then resumed.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.progress import Progress

from grader.batch.discovery import BatchItem, discover_submissions, unique_keys
from grader.batch.gradebook import (
    STATUS_GRADED,
    STATUS_GRADER_ERROR,
    STATUS_NO_FILES,
    STATUS_NOT_GRADED,
    gradebook_rows,
    report_status,
)
from grader.batch.metadata import MAX_METADATA_BYTES, Submitter, read_gradescope_metadata
from grader.batch.resume import is_up_to_date, plan, report_path, submission_fingerprint
from grader.batch.run import STOPPED_NOTE, _RateColumn
from grader.batch.stats import summarize
from grader.batch.summary import summary_html
from grader.course.manifest import load_assignment
from grader.errors import UsageError
from grader.results.report import Report, report_from_dict
from grader.workers.executors import worker_environment
from tests.support import (
    COURSE_ROOT,
    PART_FILES,
    SOLUTIONS_DIR,
    copy_part_files,
    notebook_with_part_code,
    part_scores,
    run_grader_cli,
)

ASSIGNMENT = load_assignment("pytorch_basics")
PARTS = tuple(part.id for part in ASSIGNMENT.parts)
POINTS = {part.id: part.points for part in ASSIGNMENT.parts}
FILE_OF = {part.id: part.file for part in ASSIGNMENT.parts}
SEED = 4242
# The per-test time limit inside these batches: the sleeping submission costs this once.
TEST_TIMEOUT_S = "10"
ASSIGNMENT_STUBS = COURSE_ROOT / "assignments" / "pytorch_basics"


def typed(reports: dict[str, dict[str, Any] | None]) -> dict[str, Report | None]:
    """The reports as the batch holds them, read back from report.json's data."""
    return {key: None if data is None else report_from_dict(data) for key, data in reports.items()}


# -- discovery and Gradescope metadata (fast) ------------------------------------------------

GRADESCOPE_METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '100'
    :email: ada@example.edu
  :created_at: !ruby/object:ActiveSupport::TimeWithZone
    utc: 2024-01-01 10:00:00.000000000 Z
  :results:
    :tests:
    - :name: not a student
      :email: nobody@example.edu
submission_102:
  :submitters:
  - :name: "=HYPERLINK(\\"http://x\\")"
    :email: one@example.edu
  - :name: Grace Hopper
    :sid: '201'
    :email: grace@example.edu
  :score: 10.0
"""


def test_workers_get_only_the_environment_grading_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker forks the sandbox's zygote from itself, and student code can read the
    # environment block a process inherits: a staff token must not reach it.
    monkeypatch.setenv("CANVAS_API_TOKEN", "secret")
    monkeypatch.setenv("GRADER_DEPLOY_TOKEN", "secret")
    monkeypatch.setenv("GRADER_TEST_TIMEOUT_S", "7")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("PATH", "/home/staff/secret-tools:/usr/bin")
    monkeypatch.setenv("GRADER_COURSE", "/home/staff/secret-course")  # the config carries it
    env = worker_environment()
    assert "secret" not in repr(env)
    assert env["GRADER_TEST_TIMEOUT_S"] == "7" and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert env["PYTHONPATH"] == str(COURSE_ROOT) and env["OMP_NUM_THREADS"] == "1"


def test_metadata_with_ruby_tags_gives_the_submitters(tmp_path: Path) -> None:
    metadata = tmp_path / "submission_metadata.yml"
    metadata.write_text(GRADESCOPE_METADATA)
    assert read_gradescope_metadata(metadata) == {
        "submission_101": (Submitter("Ada Lovelace", "ada@example.edu", "100"),),
        "submission_102": (
            Submitter('=HYPERLINK("http://x")', "one@example.edu", ""),
            Submitter("Grace Hopper", "grace@example.edu", "201"),
        ),
    }


def test_plain_gradescope_metadata_reads_numbers_as_text(tmp_path: Path) -> None:
    metadata = tmp_path / "submission_metadata.yml"
    metadata.write_text(
        "submission_7:\n  :submitters:\n  - :name: Alan Turing\n    :email: alan@example.edu\n"
        "    :sid: 7\n  :score: 3.0\n"
    )
    assert read_gradescope_metadata(metadata) == {
        "submission_7": (Submitter("Alan Turing", "alan@example.edu", "7"),)
    }


def laughs(levels: int = 9) -> str:
    """YAML whose last alias stands for 10**levels strings (a billion laughs)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


# Each file is refused or read for what it holds without expanding anything; none can stop the
# batch. `reason`: a phrase of the warning, where the file gives no metadata at all.
HOSTILE_METADATA = {
    "billion-laughs": (
        laughs()
        + "alice:\n  :submitters: *l9\n"
        + "bob:\n  :submitters:\n  - :name: *l9\n    :email: bob@example.edu\n    :sid: *l8\n"
        + "carol:\n  :submitters:\n  - *l9\n  - :name: Carol\n",
        {
            "alice": (),
            "bob": (Submitter("", "bob@example.edu", ""),),
            "carol": (Submitter("Carol"),),
        },
        "",
    ),
    "merge-key-bomb": (
        "a0: &a0 {k: 1}\n"
        + "".join(
            f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}, *a{i - 1}], k{i}: 1}}\n"
            for i in range(1, 30)
        ),
        {},
        "merge keys",
    ),
    "deep-nesting": ("alice: " + "[" * 200_000 + "]" * 200_000 + "\n", {}, "not metadata"),
    "python-object-tag": (
        "alice: !!python/object/apply:os.system ['touch pwned']\n",
        {},
        "ConstructorError",
    ),
    "wrong-types": (
        "alice: [1, 2]\n"
        + "bob:\n  :submitters: a string\n"
        + "carol:\n  :submitters:\n  - [a, list]\n  - :name: {a: mapping}\n    :sid: 12\n",
        {"carol": (Submitter("", "", "12"),)},
        "",
    ),
    "unhashable-key": ("? [a, key]\n: x\n", {}, "ConstructorError"),
    "not-a-mapping": ("- alice\n- bob\n", {}, "not a mapping"),
    "not-yaml": ("alice: [unclosed\n  :submitters: {\n", {}, "not metadata"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_METADATA))
def test_hostile_metadata_is_read_as_bounded_data(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, expected, reason = HOSTILE_METADATA[case]
    metadata = tmp_path / "submission_metadata.yml"
    metadata.write_text(text)
    monkeypatch.chdir(tmp_path)
    assert read_gradescope_metadata(metadata) == expected
    assert not (tmp_path / "pwned").exists()
    if reason:
        assert reason in caplog.text and "named by their submissions" in caplog.text


def test_metadata_over_the_size_limit_is_not_parsed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    metadata = tmp_path / "submission_metadata.yml"
    with metadata.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_METADATA_BYTES + 1)
    assert read_gradescope_metadata(metadata) == {}
    assert "over the" in caplog.text


def test_discovers_a_gradescope_export_inside_its_unzipped_folder(tmp_path: Path) -> None:
    export = tmp_path / "download" / "assignment_9_export"
    for folder in ("submission_101", "submission_102", "submission_103"):
        (export / folder).mkdir(parents=True)
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    items = discover_submissions(tmp_path / "download", ASSIGNMENT)
    assert [(i.key, i.student, i.email) for i in items] == [
        ("submission_101", "Ada Lovelace", "ada@example.edu"),
        (
            "submission_102",
            '=HYPERLINK("http://x"); Grace Hopper',
            "one@example.edu; grace@example.edu",
        ),
        ("submission_103", "submission_103", ""),
    ]


def test_discovers_folders_zips_and_notebooks_and_skips_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "class"
    for folder in ("alice", "bob", "__MACOSX", ".hidden", "out"):
        (root / folder).mkdir(parents=True)
    (root / "bob.zip").write_bytes(b"")
    (root / "carol.ipynb").write_text("{}")
    (root / "roster.csv").write_text("name\n")
    (root / "link").symlink_to(root / "alice")
    # A link to itself: resolving it raises, so it must be skipped before anything resolves it.
    (root / "loop.zip").symlink_to(root / "loop.zip")
    items = discover_submissions(root, ASSIGNMENT, exclude=[root / "out"])
    assert [(i.key, i.path.name) for i in items] == [
        ("alice", "alice"),
        ("bob", "bob"),  # bob/ and bob.zip keep their full names apart
        ("bob.zip", "bob.zip"),
        ("carol", "carol.ipynb"),
    ]


def test_names_sharing_a_stem_or_a_case_keep_apart_with_stable_keys(tmp_path: Path) -> None:
    root = tmp_path / "class"
    (root / "r").mkdir(parents=True)
    names = [b"r.zip", b"r.zip.ipynb", b"Jos\xe9.zip", b"Jos\xe8.zip", b"Bob.zip", b"bob.zip"]
    for name in names:
        (root / os.fsdecode(name)).write_bytes(b"")
    items = discover_submissions(root, ASSIGNMENT)
    keys = [item.key for item in items]
    assert len({key.casefold() for key in keys}) == len(keys) == 7, keys
    by_name = {os.fsencode(item.path.name): item.key for item in items}
    assert (by_name[b"r"], by_name[b"r.zip"], by_name[b"r.zip.ipynb"]) == (
        "r",
        "r.zip",
        "r.zip.ipynb",
    )
    # Undecodable bytes become a readable key with a hash of the raw name.
    assert by_name[b"Jos\xe9.zip"].startswith("Jos_~")
    assert by_name[b"Jos\xe9.zip"] != by_name[b"Jos\xe8.zip"]
    for key in keys:
        key.encode("utf-8")  # no surrogates left
        assert "/" not in key and not key.startswith(".")
    # The same folder gives the same keys, in whatever order its entries are listed.
    entries = [(item.path.name, item.path.is_file()) for item in items]
    assert unique_keys(entries[::-1]) == keys[::-1]
    assert [i.key for i in discover_submissions(root, ASSIGNMENT)] == keys


def test_reports_live_apart_from_the_batchs_own_outputs(tmp_path: Path) -> None:
    for name in ("batch.json", "gradebook.csv", "summary.json", "summary.html", ".logs"):
        path = report_path(tmp_path, BatchItem(name, tmp_path / name))
        assert path.parent.parent == tmp_path / "reports", path


def test_refuses_a_folder_that_is_one_submission(reference_copy: Path) -> None:
    with pytest.raises(UsageError, match="looks like one submission"):
        discover_submissions(reference_copy, ASSIGNMENT)


def test_refuses_a_folder_without_submissions(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no submissions"):
        discover_submissions(tmp_path, ASSIGNMENT)


def test_refuses_the_folder_above_an_export_and_skips_earlier_outputs(tmp_path: Path) -> None:
    # An export beside an earlier --out: passing their parent would grade the whole export
    # as one student, and the earlier output as another.
    export = tmp_path / "assignment_9_export"
    (export / "submission_101").mkdir(parents=True)
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    (tmp_path / "grading-out").mkdir()
    (tmp_path / "grading-out" / "batch.json").write_text("{}")
    with pytest.raises(UsageError, match=r"is a Gradescope export .* pass .*assignment_9_export"):
        discover_submissions(tmp_path, ASSIGNMENT)
    shutil.rmtree(export)
    (tmp_path / "alice").mkdir()
    assert [item.key for item in discover_submissions(tmp_path, ASSIGNMENT)] == ["alice"]


def test_a_student_who_uploads_an_export_s_files_is_still_graded(tmp_path: Path) -> None:
    # Each submission folder holds what its student uploaded: a submission_metadata.yml
    # there must not stop the whole class's batch, nor a batch.json leave the student out.
    export = tmp_path / "assignment_9_export"
    for folder in ("submission_101", "submission_102"):
        (export / folder).mkdir(parents=True)
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    (export / "submission_101" / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    (export / "submission_102" / "batch.json").write_text("{}")
    items = discover_submissions(export, ASSIGNMENT)
    assert [(item.key, item.student) for item in items] == [
        ("submission_101", "Ada Lovelace"),
        ("submission_102", '=HYPERLINK("http://x"); Grace Hopper'),
    ]
    # In a class folder of staff-named folders too: only an export's own name stops a batch.
    plain = tmp_path / "class"
    (plain / "alice").mkdir(parents=True)
    (plain / "alice" / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    assert [item.key for item in discover_submissions(plain, ASSIGNMENT)] == ["alice"]


# -- reports, gradebook and summary (fast) ---------------------------------------------------


def fake_report(scores: dict[str, float], *, seed: int = 1, **extra: Any) -> dict[str, Any]:
    tests = [
        {
            "name": f"{part} works",
            "part": part,
            "outcome": "passed" if s else "failed",
            "message": "" if s else f"{part} differs from the reference.\ndetails",
            "score": s,
        }
        for part, s in scores.items()
    ]
    report = {
        "assignment": ASSIGNMENT.id,
        "score": sum(scores.values()),
        "max_score": ASSIGNMENT.max_score,
        "parts": {
            part: {"score": scores.get(part, 0.0), "max_score": POINTS[part]} for part in PARTS
        },
        "tests": tests,
        "seed": seed,
        "device": "cpu",
        "submission": {"sha256": "abc", "files": list(PART_FILES)},
        "grader_error": None,
    }
    report.update(extra)
    return report


def test_a_report_is_reused_only_for_the_same_submission_seed_and_assignment() -> None:
    report = fake_report({"manual_backprop": 20.0})
    same: dict[str, Any] = {
        "assignment": ASSIGNMENT,
        "seed": 1,
        "device": "auto",
        "fingerprint": "abc",
    }
    assert is_up_to_date(report_from_dict(report), **same)
    assert not is_up_to_date(report_from_dict(report), **{**same, "fingerprint": "changed"})
    assert not is_up_to_date(report_from_dict(report), **{**same, "fingerprint": ""})
    assert not is_up_to_date(report_from_dict(report), **{**same, "seed": 2})
    assert not is_up_to_date(report_from_dict(report), **{**same, "device": "cuda"})
    assert not is_up_to_date(report_from_dict({**report, "grader_error": "worker died"}), **same)
    assert not is_up_to_date(None, **same)


def test_gradebook_rows_follow_reports_and_defuse_formulas() -> None:
    items = [
        BatchItem("s1", Path("s1"), (Submitter("=cmd|' /C calc'!A0", "a@b.c"),)),
        BatchItem("s2", Path("s2")),
        BatchItem("s3", Path("s3")),
        BatchItem("s4", Path("s4")),
    ]
    reports: dict[str, dict[str, Any] | None] = {
        "s1": fake_report({"manual_backprop": 20.0, "autograd_loop": 7.5}),
        "s2": fake_report({}, submission={"sha256": "", "files": []}),
        "s3": fake_report({}, grader_error="the worker stopped"),
    }
    rows = gradebook_rows(items, typed(reports), ASSIGNMENT)
    assert rows[0]["student"] == "'=cmd|' /C calc'!A0"
    assert (rows[0]["total"], rows[0]["manual_backprop"], rows[0]["autograd_loop"]) == (
        "27.5",
        "20",
        "7.5",
    )
    assert [row["status"] for row in rows] == [
        STATUS_GRADED,
        STATUS_NO_FILES,
        STATUS_GRADER_ERROR,
        STATUS_NOT_GRADED,
    ]
    assert rows[3]["total"] == ""
    assert report_status(None) == STATUS_NOT_GRADED


def test_summary_counts_graded_submissions_and_ranks_failures() -> None:
    items = [BatchItem(f"s{i}", Path(f"s{i}")) for i in range(5)]
    reports: dict[str, dict[str, Any] | None] = {
        "s0": fake_report({"manual_backprop": 20.0, "autograd_loop": 15.0}),
        "s1": fake_report({"manual_backprop": 20.0, "autograd_loop": 0.0}),
        "s2": fake_report({"manual_backprop": 0.0, "autograd_loop": 0.0}),
        "s3": fake_report({"manual_backprop": 20.0}, grader_error="worker died"),
        "s4": None,
    }
    summary = summarize(ASSIGNMENT, items, typed(reports))
    assert (summary.counted, summary.grader_errors, summary.not_graded) == (3, 1, 1)
    backprop, autograd = summary.parts[0], summary.parts[1]
    assert (backprop.mean, backprop.median, backprop.full_marks_rate) == (13.3333, 20.0, 0.6667)
    assert (autograd.mean, autograd.median, autograd.full_marks_rate) == (5.0, 0.0, 0.3333)
    top = summary.failed_tests[0]
    assert (top.part, top.failures, top.message, top.message_count) == (
        "autograd_loop",
        2,
        "autograd_loop differs from the reference.",
        2,
    )
    page = summary_html(summary, gradebook_rows(items, typed(reports), ASSIGNMENT))
    assert "<svg" in page and "13.33" in page and "13.3333" not in page
    # Offline: nothing fetched (the SVG namespace is a name, not a request).
    assert "<script" not in page and "src=" not in page and "<link" not in page


def test_summary_html_escapes_student_text() -> None:
    items = [BatchItem("s0", Path("s0"), (Submitter("<img src=x onerror=alert(1)>"),))]
    report = fake_report({"manual_backprop": 0.0})
    report["tests"][0]["message"] = "<script>alert(1)</script>"
    reports: dict[str, dict[str, Any] | None] = {"s0": report}
    page = summary_html(
        summarize(ASSIGNMENT, items, typed(reports)),
        gradebook_rows(items, typed(reports), ASSIGNMENT),
    )
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page


# -- a class of 30, end to end ---------------------------------------------------------------

Expectation = dict[str, str]  # part -> "full", "zero" or "less" (below full); others "zero"


def reference(part: str) -> str:
    return (SOLUTIONS_DIR / FILE_OF[part]).read_text()


def mutated(part: str, old: str, new: str) -> str:
    source = reference(part)
    assert old in source, f"the reference {FILE_OF[part]} changed: {old!r} is gone"
    return source.replace(old, new)


def with_prelude(part: str, code: str) -> str:
    """The reference of `part` with `code` run first on import (after its __future__ line)."""
    future = "from __future__ import annotations\n"
    return mutated(part, future, future + code)


def classmate_loader(path: Path, names: str) -> str:
    """A part file that takes its functions from another student's submission by path."""
    return (
        "import importlib.util\n"
        f"_spec = importlib.util.spec_from_file_location('classmate', {str(path)!r})\n"
        "_module = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_module)\n"
        + "".join(f"{name} = _module.{name}\n" for name in names.split())
    )


def forger(out: Path, victim: str) -> str:
    """Code that tries to overwrite a report and the gradebook, and carries on if it cannot."""
    fake = json.dumps({"score": 100.0, "parts": {}})
    return (
        "import pathlib\n"
        f"for _target in ({str(report_file(out, victim))!r}, {str(out / 'gradebook.csv')!r}):\n"
        "    try:\n"
        "        pathlib.Path(_target).parent.mkdir(parents=True, exist_ok=True)\n"
        f"        pathlib.Path(_target).write_text({fake!r})\n"
        "    except OSError:\n"
        "        pass\n"
    )


def build_class(root: Path, out: Path) -> dict[str, Expectation]:
    """Write 30 submissions under `root`; return what each part of each must score."""
    root.mkdir(parents=True)
    expected: dict[str, Expectation] = {}

    def folder(name: str, files: Mapping[str, str | bytes], expect: Expectation) -> None:
        target = root / name
        target.mkdir()
        for file_name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            (target / file_name).write_bytes(data)
        expected[name] = expect

    everything = {FILE_OF[p]: reference(p) for p in PARTS}
    # Sorted first, so a worker is busy with it when the test kills the workers.
    folder(
        "00-sleeps-at-import",
        {
            "manual_backprop.py": with_prelude(
                "manual_backprop", "import time\ntime.sleep(1000)\n"
            ),
            "two_layer_net.py": reference("two_layer_net"),
        },
        {"manual_backprop": "zero", "two_layer_net": "full"},
    )
    folder("01-correct-folder", everything, dict.fromkeys(PARTS, "full"))
    with zipfile.ZipFile(root / "02-correct-nested-zip.zip", "w") as archive:
        for file_name, content in everything.items():
            archive.writestr(f"homework/{file_name}", content)
        archive.writestr("__MACOSX/homework/._manual_backprop.py", b"\0junk")
    expected["02-correct-nested-zip"] = dict.fromkeys(PARTS, "full")
    for index, part in enumerate(PARTS, start=3):
        folder(f"{index:02d}-only-{part}", {FILE_OF[part]: reference(part)}, {part: "full"})
    bugs = [
        (
            "manual_backprop",
            "grad_h = grad_h_relu.masked_fill(h <= 0, 0.0)",
            "grad_h = grad_h_relu",
        ),
        ("autograd_loop", "            w1.grad.zero_()\n            w2.grad.zero_()\n", ""),
        ("custom_sigmoid", "return grad_y * y * (1.0 - y)", "return grad_y * y"),
        (
            "two_layer_net",
            "self.linear2(torch.relu(self.linear1(x)))",
            "self.linear2(self.linear1(x))",
        ),
        ("dataloader_training", "shuffle=shuffle)", "shuffle=False)"),
        ("device_benchmark", "return gflops / 1000", "return gflops"),
    ]
    for index, (part, old, new) in enumerate(bugs, start=9):
        folder(
            f"{index:02d}-bug-in-{part}", {FILE_OF[part]: mutated(part, old, new)}, {part: "less"}
        )
    hostile: list[tuple[str, dict[str, str | bytes], Expectation]] = [
        (
            "syntax-error-next-to-a-correct-part",
            {
                "manual_backprop.py": "def forward_backward(:\n",
                "custom_sigmoid.py": reference("custom_sigmoid"),
            },
            {"custom_sigmoid": "full"},
        ),
        ("empty-folder", {}, {}),
        ("binary-file", {"two_layer_net.py": b"\x7fELF\0\0\0binary"}, {}),
        (
            "untouched-stub",
            {"custom_sigmoid.py": (ASSIGNMENT_STUBS / "custom_sigmoid.py").read_text()},
            {},
        ),
        ("imports-a-missing-module", {"autograd_loop.py": "import numpy_but_misspelled\n"}, {}),
        (
            "sys-exit-at-import",
            {"two_layer_net.py": with_prelude("two_layer_net", "import sys\nsys.exit(0)\n")},
            {},
        ),
        (
            "os-exit-inside-a-function",
            {
                "autograd_loop.py": mutated(
                    "autograd_loop",
                    "    losses: list[float] = []\n",
                    "    import os\n    os._exit(0)\n",
                )
            },
            {},
        ),
        (
            "kills-every-process-it-can",
            {
                "two_layer_net.py": "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
                "custom_sigmoid.py": reference("custom_sigmoid"),
            },
            {"custom_sigmoid": "full"},
        ),
        (
            "copies-a-classmate",
            {
                "manual_backprop.py": classmate_loader(
                    root / "01-correct-folder" / "manual_backprop.py",
                    "forward_backward train_manual",
                )
            },
            {"manual_backprop": "zero"},
        ),
        (
            "forges-reports",
            {"custom_sigmoid.py": with_prelude("custom_sigmoid", forger(out, "01-correct-folder"))},
            {"custom_sigmoid": "full"},
        ),
        (
            "floods-stdout",
            {"two_layer_net.py": with_prelude("two_layer_net", "print('spam ' * 1_000_000)\n")},
            {"two_layer_net": "full"},
        ),
        (
            "ships-conftest-and-torch-py",
            {
                "custom_sigmoid.py": reference("custom_sigmoid"),
                "conftest.py": "import sys\nsys.exit(3)\n",
                "torch.py": "raise SystemExit(4)\n",
            },
            {"custom_sigmoid": "full"},
        ),
        (
            "windows-line-endings-and-bom",
            {"two_layer_net.py": "\ufeff" + reference("two_layer_net").replace("\n", "\r\n")},
            {"two_layer_net": "full"},
        ),
    ]
    for index, (name, files, expect) in enumerate(hostile, start=15):
        folder(f"{index:02d}-{name}", files, expect)
    (root / "28-not-a-zip.zip").write_bytes(b"this is not a zip archive")
    expected["28-not-a-zip"] = {}
    two_parts = {FILE_OF[p]: reference(p) for p in PARTS[:2]}
    folder("29-two-correct-parts", two_parts, dict.fromkeys(PARTS[:2], "full"))
    assert len(expected) == 30, sorted(expected)
    return expected


def report_file(out: Path, key: str) -> Path:
    return out / "reports" / key / "report.json"


def gradebook(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((out / "gradebook.csv").read_text().splitlines()))


def meets(score: float, part: str, expectation: str) -> bool:
    full = score >= POINTS[part] - 1e-4
    return {"full": full, "zero": score == 0, "less": not full}[expectation]


@dataclass
class ClassBatch:
    root: Path
    out: Path
    expected: dict[str, Expectation]
    # After the interrupted run: report mtimes of the submissions it graded, and those it
    # recorded as grader errors (the ones its killed workers held).
    graded_first: dict[str, int]
    crashed_first: set[str]
    # The killed run's scratch folder, which the resumed run removes.
    stale_scratch: Path
    resumed: subprocess.CompletedProcess[str]

    def report(self, key: str) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(report_file(self.out, key).read_text())
        return report


def worker_pids(coordinator: int) -> list[int]:
    """The batch workers of one coordinator (their command line ends with its pid)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"serve_worker" in arg for arg in argv) and str(coordinator).encode() in argv[-2:]:
            pids.append(int(cmdline.parent.name))
    return pids


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def reports_in(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in out.glob("reports/*/report.json"):
        found[path.parent.name] = json.loads(path.read_text())
    return found


def batch_args(root: Path, out: Path, *extra: str) -> list[str]:
    return ["batch", str(root), "--out", str(out), "--workers", "2", "--seed", str(SEED), *extra]


@pytest.fixture(scope="module")
def class_batch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassBatch]:
    base = tmp_path_factory.mktemp("class")
    root, out = base / "submissions", base / "grading-out"
    expected = build_class(root, out)
    # A scratch root of this batch's own: a grade another test runs meanwhile sweeps the
    # stale folders of its root, which would take the killed batch's before the resumed
    # batch is shown to. (Traversable, as the sandbox users need.)
    scratch_root = base / "scratch-root"
    scratch_root.mkdir(mode=0o711)
    scratch_root.chmod(0o711)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TEST_TIMEOUT_S", TEST_TIMEOUT_S)
        patch.setenv("TMPDIR", str(scratch_root))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env["PYTHONPATH"] = str(COURSE_ROOT)
        first = subprocess.Popen(
            [sys.executable, "-m", "grader", *batch_args(root, out)],
            cwd=COURSE_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: len(reports_in(out)) >= 3, "the first reports")
            killed = worker_pids(first.pid)
            assert killed
            for pid in killed:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            count = len(reports_in(out))
            wait_for(lambda: len(reports_in(out)) >= count + 4, "reports after the workers died")
        finally:
            first.kill()
            first.wait()
        # The workers die with the command, so nothing writes a report after this point.
        wait_for(lambda: not worker_pids(first.pid), "the workers to exit", timeout=30)
        after_kill = reports_in(out)
        crashed = {key for key, r in after_kill.items() if r["grader_error"]}
        graded_first = {
            key: report_file(out, key).stat().st_mtime_ns
            for key in after_kill
            if key not in crashed
        }
        stale_scratch = Path(json.loads((out / "batch.json").read_text())["scratch"])
        assert stale_scratch.is_dir()
        resumed = run_grader_cli(*batch_args(root, out))
    yield ClassBatch(root, out, expected, graded_first, crashed, stale_scratch, resumed)


@pytest.mark.slow
def test_interrupted_batch_resumes_without_regrading(class_batch: ClassBatch) -> None:
    assert class_batch.resumed.returncode == 0, class_batch.resumed.stderr
    said = " ".join(class_batch.resumed.stdout.split())  # rich wraps lines
    assert f"{len(class_batch.graded_first)} already graded" in said
    for key, mtime in class_batch.graded_first.items():
        assert report_file(class_batch.out, key).stat().st_mtime_ns == mtime, key
    rows = gradebook(class_batch.out)
    assert sorted(row["submission"] for row in rows) == sorted(class_batch.expected)
    assert {row["status"] for row in rows} <= {STATUS_GRADED, STATUS_NO_FILES}
    assert not class_batch.stale_scratch.exists()


@pytest.mark.slow
def test_a_killed_worker_costs_only_its_submission(class_batch: ClassBatch) -> None:
    # The submissions the killed workers held were recorded as grader errors, the batch
    # went on with fresh workers, and the resumed run graded them properly.
    assert class_batch.crashed_first
    for key in class_batch.crashed_first:
        report = class_batch.report(key)
        assert not report["grader_error"], key
        assert report["tests"], key
    assert len(class_batch.graded_first) + len(class_batch.crashed_first) >= 7


@pytest.mark.slow
def test_every_submission_gets_its_expected_part_scores(class_batch: ClassBatch) -> None:
    wrong = {}
    for key, expectation in class_batch.expected.items():
        scores = part_scores(class_batch.report(key))
        for part in PARTS:
            if not meets(scores[part], part, expectation.get(part, "zero")):
                wrong[f"{key}:{part}"] = (scores[part], expectation.get(part, "zero"))
    assert not wrong
    statuses = {
        key: report_status(report_from_dict(class_batch.report(key)))
        for key in class_batch.expected
    }
    assert {key for key, s in statuses.items() if s == STATUS_NO_FILES} == {
        "16-empty-folder",
        "17-binary-file",
        "28-not-a-zip",
    }


@pytest.mark.slow
def test_gradebook_rows_match_each_report(class_batch: ClassBatch) -> None:
    rows = gradebook(class_batch.out)
    assert list(rows[0]) == ["student", "email", "submission", "total", *PARTS, "status"]
    for row in rows:
        report = class_batch.report(row["submission"])
        assert row["student"] == row["submission"]
        # The gradebook rounds to 2 decimals.
        assert float(row["total"]) == pytest.approx(report["score"], abs=0.005)
        assert {p: float(row[p]) for p in PARTS} == pytest.approx(part_scores(report), abs=0.005)
        assert row["status"] == report_status(report_from_dict(report))
    # The forger could not touch another student's report or the gradebook.
    victim = class_batch.report("01-correct-folder")
    assert victim["seed"] == SEED and len(victim["tests"]) > 30


@pytest.mark.slow
def test_summary_matches_the_gradebook(class_batch: ClassBatch) -> None:
    rows = gradebook(class_batch.out)
    summary = json.loads((class_batch.out / "summary.json").read_text())
    assert summary["counted"] == len(rows) == 30
    for stats in summary["parts"]:
        scores = [float(row[stats["id"]]) for row in rows]
        # The gradebook rounds to 2 decimals.
        assert stats["mean"] == pytest.approx(sum(scores) / len(scores), abs=0.01)
    failed = {(t["part"], t["name"]) for t in summary["failed_tests"]}
    assert failed and all(part in PARTS for part, _ in failed)
    page = (class_batch.out / "summary.html").read_text()
    assert "<svg" in page and "<script" not in page


@pytest.mark.slow
def test_batch_scores_equal_individual_grade_runs(
    class_batch: ClassBatch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADER_TEST_TIMEOUT_S", TEST_TIMEOUT_S)
    keys = [
        "02-correct-nested-zip",
        "09-bug-in-manual_backprop",
        "22-kills-every-process-it-can",
    ]

    def grade(key: str) -> dict[str, Any]:
        path = next(class_batch.root.glob(f"{key}*"))
        report = tmp_path / f"{key}.json"
        process = run_grader_cli("grade", path, "--seed", str(SEED), "--report", report)
        assert process.returncode == 0, process.stderr
        loaded: dict[str, Any] = json.loads(report.read_text())
        return loaded

    with ThreadPoolExecutor(max_workers=2) as pool:
        alone = dict(zip(keys, pool.map(grade, keys), strict=True))
    for key in keys:
        in_batch = class_batch.report(key)
        assert part_scores(alone[key]) == part_scores(in_batch), key
        assert alone[key]["submission"]["sha256"] == in_batch["submission"]["sha256"]


# The Ray executor regrades a few of the class's entries (a folder, a nested zip, a partial
# one): what it adds is the transport, which a few entries exercise as well as thirty.
RAY_ENTRIES = ("01-correct-folder", "02-correct-nested-zip.zip", "29-two-correct-parts")


def gradebook_by_submission(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_ray_batch_gives_identical_scores(
    class_batch: ClassBatch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'torch-grader[ray]')")
    monkeypatch.setenv("GRADER_TEST_TIMEOUT_S", TEST_TIMEOUT_S)
    root, out = tmp_path / "ray-submissions", tmp_path / "ray-out"
    root.mkdir()
    for entry in RAY_ENTRIES:
        source = class_batch.root / entry
        if source.is_dir():
            shutil.copytree(source, root / entry)
        else:
            shutil.copy2(source, root / entry)
    process = run_grader_cli(*batch_args(root, out, "--executor", "ray"))
    assert process.returncode == 0, process.stdout + process.stderr
    in_ray = gradebook_by_submission(out / "gradebook.csv")
    in_class = gradebook_by_submission(class_batch.out / "gradebook.csv")
    assert len(in_ray) == 3
    for key, row in in_ray.items():
        assert row == in_class[key], key
        report = json.loads(report_file(out, key).read_text())
        assert part_scores(report) == part_scores(class_batch.report(key)), key


# -- names and messages that once broke a batch, end to end ----------------------------------

GIANT_MESSAGE_ATTACK = COURSE_ROOT / "tests" / "hostile" / "giant-and-surrogate-messages"
# report.json's bound: the tests' text in total (grader/results/report.py) plus the rest.
MAX_REPORT_BYTES = 1_500_000


@dataclass
class TrickyBatch:
    out: Path
    expected: dict[bytes, dict[str, float]]  # raw entry name -> part scores
    first: subprocess.CompletedProcess[str]
    rerun: subprocess.CompletedProcess[str]
    mtimes: dict[str, int]


def zip_of(path: Path, files: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)


def only(*parts: str) -> dict[str, float]:
    return {part: POINTS[part] if part in parts else 0.0 for part in PARTS}


@pytest.fixture(scope="module")
def tricky_batch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrickyBatch]:
    """Entries whose keys once collided, a name that is not UTF-8, names of the batch's own
    outputs, messages with lone surrogates and 15 MB of text, and hostile export metadata;
    graded, then run again."""
    base = tmp_path_factory.mktemp("tricky")
    root, out = base / "submissions", base / "grading-out"
    root.mkdir()

    def files(*parts: str) -> dict[str, str]:
        return {FILE_OF[part]: reference(part) for part in parts}

    expected: dict[bytes, dict[str, float]] = {}
    copy_part_files(SOLUTIONS_DIR, root / "r")
    expected[b"r"] = only(*PARTS)
    zip_of(root / "r.zip", files("manual_backprop"))
    expected[b"r.zip"] = only("manual_backprop")
    notebook_with_part_code(
        ASSIGNMENT_STUBS / "walkthrough.ipynb",
        {"two_layer_net": reference("two_layer_net")},
        root / "r.zip.ipynb",
    )
    expected[b"r.zip.ipynb"] = only("two_layer_net")
    zip_of(root / os.fsdecode(b"Jos\xe9.zip"), files("custom_sigmoid"))
    expected[b"Jos\xe9.zip"] = only("custom_sigmoid")
    for name, part in (
        ("gradebook.csv", "autograd_loop"),
        ("batch.json", "dataloader_training"),
        ("reports", "device_benchmark"),
    ):
        (root / name).mkdir()
        for file_name, content in files(part).items():
            (root / name / file_name).write_text(content)
        expected[name.encode()] = only(part)
    # A folder holding only the kit's zip, as students upload it: graded from the zip.
    (root / "zipped").mkdir()
    zip_of(root / "zipped" / "pytorch_basics_submission.zip", files("two_layer_net"))
    expected[b"zipped"] = only("two_layer_net")
    giant = copy_part_files(SOLUTIONS_DIR, root / "giant-message")
    attack = (GIANT_MESSAGE_ATTACK / "device_benchmark.append.py").read_text()
    with (giant / "device_benchmark.py").open("a") as handle:
        handle.write("\n" + attack)
    # pick_device and matmul_tflops fail; peak_tflops passes: 3 of 9 weighted points.
    expected[b"giant-message"] = {**only(*PARTS), "device_benchmark": 10 * 3 / 9}
    # Hostile export metadata: a billion laughs, and a name that is one of them.
    (root / "submission_metadata.yml").write_text(
        laughs() + "giant-message:\n  :submitters:\n  - :name: *l9\n    :email: g@example.edu\n"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TEST_TIMEOUT_S", TEST_TIMEOUT_S)
        first = run_grader_cli(*batch_args(root, out))
        mtimes = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("reports/*/report.json")}
        rerun = run_grader_cli(*batch_args(root, out))
    yield TrickyBatch(out, expected, first, rerun, mtimes)


@pytest.mark.slow
def test_every_tricky_entry_gets_its_own_correct_row(tricky_batch: TrickyBatch) -> None:
    assert tricky_batch.first.returncode == 0, tricky_batch.first.stderr[-3000:]
    rows = {row["submission"]: row for row in gradebook(tricky_batch.out)}
    assert len(rows) == len(tricky_batch.expected)
    # The name that is not UTF-8 gets a readable key with a hash of its raw bytes.
    keys = {name: name.decode() for name in tricky_batch.expected if name.isascii()}
    keys[b"Jos\xe9.zip"] = next(key for key in rows if key.startswith("Jos_~"))
    assert sorted(keys.values()) == sorted(rows)
    for name, scores in tricky_batch.expected.items():
        row = rows[keys[name]]
        assert row["status"] == STATUS_GRADED, (name, row)
        assert {p: float(row[p]) for p in PARTS} == pytest.approx(scores, abs=0.005), name
        report = json.loads(report_file(tricky_batch.out, keys[name]).read_text())
        assert part_scores(report) == pytest.approx(scores, abs=1e-4), name
    zipped = json.loads(report_file(tricky_batch.out, "zipped").read_text())
    assert zipped["submission"]["notes"][0] == (
        "Graded pytorch_basics_submission.zip: the folder holds none of the assignment's "
        "files itself."
    )
    # Staff read it on the student's page too.
    page = (tricky_batch.out / "students" / "zipped.html").read_text()
    assert "<li>Graded pytorch_basics_submission.zip: the folder holds none" in page
    summary = json.loads((tricky_batch.out / "summary.json").read_text())
    assert summary["counted"] == len(rows) and summary["grader_errors"] == 0
    assert json.loads((tricky_batch.out / "batch.json").read_text())["seed"] == SEED
    # The metadata was read for what it holds (an email); the laughs were never expanded.
    giant = rows["giant-message"]
    assert (giant["student"], giant["email"]) == ("giant-message", "g@example.edu")


@pytest.mark.slow
def test_giant_and_surrogate_messages_are_cleaned_and_capped(tricky_batch: TrickyBatch) -> None:
    path = report_file(tricky_batch.out, "giant-message")
    assert path.stat().st_size < MAX_REPORT_BYTES
    text = path.read_text(encoding="utf-8")  # no lone surrogate could be written
    assert "\x1b" not in text and "\\u001b" not in text and "\u202e" not in text
    tests = json.loads(text)["tests"]
    # The 15 MB device text never reaches the grading process: the result's header is capped.
    picked = next(t for t in tests if t["name"].startswith("pick_device"))["message"]
    assert "over the 2 MiB cap" in picked
    raised = next(t for t in tests if t["name"].startswith("matmul_tflops"))["message"]
    assert "\ufffd lone surrogate" in raised
    assert all(len(t["message"]) <= 4096 for t in tests)


@pytest.mark.slow
def test_a_rerun_of_the_tricky_batch_regrades_nothing(tricky_batch: TrickyBatch) -> None:
    assert tricky_batch.rerun.returncode == 0, tricky_batch.rerun.stderr[-3000:]
    assert len(tricky_batch.mtimes) == len(tricky_batch.expected)
    for key, mtime in tricky_batch.mtimes.items():
        assert report_file(tricky_batch.out, key).stat().st_mtime_ns == mtime, (
            key,
            tricky_batch.rerun.stdout[-2000:],
            tricky_batch.rerun.stderr[-3000:],
        )
    said = " ".join(tricky_batch.rerun.stdout.split())
    assert f"{len(tricky_batch.expected)} already graded" in said


@pytest.mark.slow
def test_a_stopped_batch_leaves_no_summary_of_an_earlier_run(tmp_path: Path) -> None:
    root, out = tmp_path / "class", tmp_path / "out"
    root.mkdir()
    for index in range(4):
        copy_part_files(SOLUTIONS_DIR, root / f"s{index}")
    out.mkdir()
    (out / "summary.json").write_text('{"earlier": true}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(COURSE_ROOT)
    command = [sys.executable, "-m", "grader", *batch_args(root, out), "--workers", "1"]
    batch = subprocess.Popen(command, cwd=COURSE_ROOT, env=env, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(reports_in(out)) >= 1, "the first report")
        batch.send_signal(signal.SIGINT)  # Ctrl-C
        assert batch.wait(timeout=120) != 0
    finally:
        batch.kill()
        batch.wait()
    summary = json.loads((out / "summary.json").read_text())
    assert "earlier" not in summary and summary["counted"] >= 1
    page = (out / "summary.html").read_text()
    assert STOPPED_NOTE in page and "No similar pairs found" not in page
    assert len(gradebook(out)) == 4


def test_a_class_without_any_of_the_assignments_files_is_flagged(tmp_path: Path) -> None:
    root = tmp_path / "class"
    for name in ("alice", "bob"):
        (root / name).mkdir(parents=True)
        (root / name / "notes.txt").write_text("the wrong assignment")
    out = tmp_path / "out"
    process = run_grader_cli(*batch_args(root, out), "--no-similarity", "-a", "pytorch_basics")
    assert process.returncode == 0, process.stderr[-3000:]
    said = " ".join(process.stdout.split())
    assert "none of the 2 submissions holds any of pytorch_basics's files" in said
    assert "is -a the right assignment?" in said


def test_a_report_stands_only_for_the_entry_it_was_written_for(tmp_path: Path) -> None:
    """Keys move as entries come and go: the report under a key may be another entry's."""
    root, out = tmp_path / "class", tmp_path / "out"
    root.mkdir()
    folder = copy_part_files(SOLUTIONS_DIR, root / "r")
    zipped = root / "r.zip"
    zip_of(zipped, {"manual_backprop.py": reference("manual_backprop")})
    items = discover_submissions(root, ASSIGNMENT)
    assert [(item.key, item.path) for item in items] == [("r", folder), ("r.zip", zipped)]
    fingerprint = submission_fingerprint(folder, ASSIGNMENT)
    # Graded when `r.zip` was alone, so keyed `r`: the folder's key now.
    written_for_the_zip = fake_report(
        {"manual_backprop": 20.0},
        seed=SEED,
        submission={"sha256": fingerprint, "files": list(PART_FILES)},
        entry=b"r.zip".hex(),
    )
    path = report_path(out, items[0])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(written_for_the_zip))
    start = plan(items, out, ASSIGNMENT, seed=SEED, device="auto", force=False, stamp={})
    assert start.reports == {} and start.todo == items
    # The zip's earlier report is its "before", under its new key; the folder has none.
    assert list(start.earlier) == ["r.zip"]
    # The same report written for the folder stands; one that names no entry does not.
    path.write_text(json.dumps({**written_for_the_zip, "entry": b"r".hex()}))
    start = plan(items, out, ASSIGNMENT, seed=SEED, device="auto", force=False, stamp={})
    assert list(start.reports) == ["r"] and start.todo == items[1:]
    del written_for_the_zip["entry"]
    path.write_text(json.dumps(written_for_the_zip))
    start = plan(items, out, ASSIGNMENT, seed=SEED, device="auto", force=False, stamp={})
    assert start.reports == start.earlier == {} and start.todo == items


@dataclass
class ChangedBatch:
    out: Path
    first: subprocess.CompletedProcess[str]
    rerun: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def changed_batch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChangedBatch]:
    """Two honest submissions graded, then changed and graded again into the same --out.

    `s` keeps its honest bytes, but in one file: manual_backprop.py also holds
    `\0autograd_loop.py\0` and autograd_loop.py's bytes, and autograd_loop.py is gone (the
    NUL-joined digest of names and bytes made that equal to the honest folder's). A folder
    `r` (the stubs) appears beside `r.zip`, which moves the zip's key from `r` to `r.zip`.
    """
    base = tmp_path_factory.mktemp("changed")
    root, out = base / "submissions", base / "grading-out"
    root.mkdir()
    honest = copy_part_files(SOLUTIONS_DIR, root / "s")
    zip_of(root / "r.zip", {FILE_OF[part]: reference(part) for part in PARTS})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TEST_TIMEOUT_S", TEST_TIMEOUT_S)
        first = run_grader_cli(*batch_args(root, out, "--no-similarity"))
        manual, autograd = honest / "manual_backprop.py", honest / "autograd_loop.py"
        manual.write_bytes(manual.read_bytes() + b"\0autograd_loop.py\0" + autograd.read_bytes())
        autograd.unlink()
        copy_part_files(ASSIGNMENT_STUBS, root / "r")
        rerun = run_grader_cli(*batch_args(root, out, "--no-similarity"))
    yield ChangedBatch(out, first, rerun)


def regrade_diff(out: Path) -> dict[str, dict[str, str]]:
    rows = csv.DictReader((out / "regrade-diff.csv").read_text().splitlines())
    return {row["submission"]: row for row in rows}


@pytest.mark.slow
def test_a_file_holding_another_file_and_its_name_is_graded_again(
    changed_batch: ChangedBatch,
) -> None:
    assert changed_batch.first.returncode == changed_batch.rerun.returncode == 0
    rows = {row["submission"]: row for row in gradebook(changed_batch.out)}
    # manual_backprop.py holds NUL bytes (not a text file), autograd_loop.py is missing.
    assert float(rows["s"]["total"]) == pytest.approx(100 - POINTS["manual_backprop"] - 15)
    said = " ".join(changed_batch.rerun.stdout.split())
    assert "regraded s: 100 -> 65 (-35)" in said
    assert regrade_diff(changed_batch.out)["s"]["after"] == "65"


@pytest.mark.slow
def test_a_moved_key_never_files_one_entrys_report_under_another(
    changed_batch: ChangedBatch,
) -> None:
    rows = {row["submission"]: row for row in gradebook(changed_batch.out)}
    assert float(rows["r"]["total"]) == 0 and float(rows["r.zip"]["total"]) == 100
    said = " ".join(changed_batch.rerun.stdout.split())
    assert "regraded r:" not in said
    diff = regrade_diff(changed_batch.out)
    assert "r" not in diff  # the folder is new: no "before"
    assert (diff["r.zip"]["before"], diff["r.zip"]["after"]) == ("100", "100")
    for key, name in (("r", b"r"), ("r.zip", b"r.zip"), ("s", b"s")):
        assert json.loads(report_file(changed_batch.out, key).read_text())["entry"] == name.hex()


def test_batch_command_reports_bad_arguments(tmp_path: Path) -> None:
    process = run_grader_cli("batch", tmp_path / "missing")
    assert process.returncode == 2
    assert "missing does not exist" in process.stderr
    (tmp_path / "notes.txt").write_text("")
    process = run_grader_cli("batch", tmp_path / "notes.txt")
    assert process.returncode == 2
    assert "notes.txt is not a folder" in process.stderr
    process = run_grader_cli("batch", tmp_path, "--workers", "0")
    assert process.returncode == 2
    assert "--workers must be at least 1" in process.stderr


def test_another_assignments_out_folder_is_refused_and_kept(tmp_path: Path) -> None:
    """A wrong -a, or one class's --out given to another, would replace that class's grades."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    out = tmp_path / "out"
    report = out / "reports" / "alice" / "report.json"
    report.parent.mkdir(parents=True)
    report.write_text('{"kept": true}')
    (out / "batch.json").write_text(json.dumps({"assignment": "pytorch_training", "seed": 1}))
    process = run_grader_cli("batch", tmp_path / "class", "--out", out, "-a", "pytorch_basics")
    assert process.returncode == 2, process.stdout + process.stderr
    said = " ".join(process.stderr.split())
    assert "holds the grades of 'pytorch_training'" in said and "another --out" in said
    assert report.read_text() == '{"kept": true}'


@pytest.mark.slow
def test_a_worker_compiles_the_hidden_tests_once_and_writes_nothing_into_solutions(
    stub_copy: Path,
) -> None:
    from grader.workers.process import GradingWorker
    from grader.workers.protocol import WorkerConfig

    def solutions_bytecode() -> set[Path]:
        return set(SOLUTIONS_DIR.parent.rglob("*.pyc"))

    before = solutions_bytecode()
    worker = GradingWorker(WorkerConfig("pytorch_basics", str(COURSE_ROOT), "cpu", 12345))
    try:
        first = worker.grade(stub_copy)
        compiled = {
            path: path.stat().st_mtime_ns for path in worker.bytecode_dir.rglob("test_*.pyc")
        }
        second = worker.grade(stub_copy)
        recompiled = {path: path.stat().st_mtime_ns for path in compiled}
    finally:
        worker.close()
    # pytest's rewritten modules, one per hidden test file, reused by the second grade.
    hidden = sorted(path.stem for path in SOLUTIONS_DIR.joinpath("hidden_tests").glob("test_*.py"))
    assert sorted(path.name.split(".")[0] for path in compiled) == hidden
    assert all("pytest" in path.name for path in compiled)
    assert recompiled == compiled
    assert first.score == second.score == 0
    assert len(first.tests) == len(second.tests) > 50
    assert solutions_bytecode() == before


def test_the_progress_rate_is_the_mean_since_the_start() -> None:
    """Not rich's recent speed, which read thousands a minute when two workers finished at once."""
    clock = [100.0]
    progress = Progress(_RateColumn(), get_time=lambda: clock[0])
    task = progress.add_task("grading", total=4)
    column = _RateColumn()
    assert str(column.render(progress.tasks[0])) == "-/min"
    clock[0] += 30.0
    progress.update(task, advance=1)
    clock[0] += 0.01
    progress.update(task, advance=1)  # two finish together
    assert str(column.render(progress.tasks[0])) == "4.0/min"
    progress.update(task, advance=2)
    assert progress.tasks[0].finished
    assert str(column.render(progress.tasks[0])) == "8.0/min"
