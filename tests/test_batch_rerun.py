"""A batch pays a bounded check once per content: deciding which reports stand and code
similarity both read every submission, and a re-run reads them all again."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grader.batch.discovery import discover_submissions
from grader.batch.resume import ENTRY_KEY, grading_stamp, report_path, submission_fingerprint
from grader.batch.run import BatchOptions, run_batch
from grader.course.manifest import load_assignment
from grader.intake import bounded, source_check
from tests.support import PART_FILES, SOLUTIONS_DIR

ASSIGNMENT = load_assignment("pytorch_basics")
SEED = 4242
# One f-string with ~350,000 fields, just under the source size limit: CPython takes
# minutes to compile it (tests/hostile/compile-bomb-fstring).
COMPILE_BOMB = 'bomb = f"' + "{1}" * 349_000 + '"\n'


def standing_report(sha256: str, entry: str) -> dict[str, Any]:
    """A report that a batch with SEED keeps for this submission: nothing to grade again."""
    parts = {p.id: {"score": p.points, "max_score": p.points} for p in ASSIGNMENT.parts}
    return {
        "assignment": ASSIGNMENT.id,
        "score": ASSIGNMENT.max_score,
        "max_score": ASSIGNMENT.max_score,
        "parts": parts,
        "tests": [],
        "seed": SEED,
        "device": "cpu",
        "submission": {"sha256": sha256, "files": list(PART_FILES)},
        "grader_error": None,
        **grading_stamp(ASSIGNMENT),
        ENTRY_KEY: entry,
    }


def test_a_rerun_with_nothing_to_grade_pays_each_bound_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source_check, "SOURCE_CHECK_SECONDS", 1.0)
    root, out = tmp_path / "submissions", tmp_path / "out"
    for key in ("alice", "bob", "bomb"):
        (root / key).mkdir(parents=True)
        for name in PART_FILES:
            (root / key / name).write_text((SOLUTIONS_DIR / name).read_text())
    (root / "bomb" / "custom_sigmoid.py").write_text(COMPILE_BOMB)
    for item in discover_submissions(root, ASSIGNMENT):
        path = report_path(out, item)
        path.parent.mkdir(parents=True)
        sha256 = submission_fingerprint(item.path, ASSIGNMENT)
        path.write_text(json.dumps(standing_report(sha256, item.entry)))

    bounds_paid: list[str] = []
    real = bounded._run_in_child

    def counting(tasks: Sequence[Any], seconds: float, memory: int) -> list[bounded.Outcome]:
        outcomes = real(tasks, seconds, memory)
        bounds_paid.extend(o.failure for o in outcomes if o.failure == bounded.TIMEOUT)
        return outcomes

    monkeypatch.setattr(bounded, "_run_in_child", counting)
    options = BatchOptions(
        root=root, out_dir=out, csv_path=out / "gradebook.csv", workers=1, seed=SEED
    )
    console = Console(file=io.StringIO())

    outcome = run_batch(options, ASSIGNMENT, console)
    assert outcome.graded == outcome.failed == []  # every report stands: nothing was graded
    # Its reports checked, then its code compared: the bomb's check ran into its bound once.
    assert bounds_paid == [bounded.TIMEOUT]
    similar = json.loads((out / "similarity.json").read_text())
    assert {(p["first"], p["second"]) for p in similar["pairs"]} >= {("alice", "bob")}

    bounds_paid.clear()
    run_batch(options, ASSIGNMENT, console)
    # The next run knows that content overran its bound.
    assert bounds_paid == []
