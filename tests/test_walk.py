"""Walking a student's folder: no recursion to overflow, links never followed, bounded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.batch import similarity
from grader.batch.discovery import BatchItem
from grader.course.manifest import load_assignment
from grader.intake import archive
from grader.intake.archive import MAX_WALK_DEPTH, walk_submission
from grader.intake.submission import prepare_submission
from grader.intake.upload import pick_upload
from tests.deep_folders import make_chain, remove_tree

ASSIGNMENT = load_assignment("pytorch_basics")
SOURCE = "def f():\n    return 1\n"


@pytest.fixture
def chain_root(tmp_path: Path) -> Iterator[Path]:
    """A folder for deep chains, removed without recursing (see tests/deep_folders.py)."""
    root = tmp_path / "submission"
    root.mkdir()
    yield root
    remove_tree(root)


def test_a_thousand_nested_folders_cost_nothing_and_are_named(
    chain_root: Path, tmp_path: Path
) -> None:
    (chain_root / "manual_backprop.py").write_text(SOURCE)
    make_chain(chain_root, 1_100)
    (chain_root.joinpath(*["d"] * 40) / "autograd_loop.py").write_text(SOURCE)
    walked = walk_submission(chain_root)
    assert walked.files == (chain_root / "manual_backprop.py",)
    assert f"more than {MAX_WALK_DEPTH} levels deep were not searched" in walked.notes[0]
    prepared = prepare_submission(chain_root, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["manual_backprop.py"]
    assert any("levels deep" in note for note in prepared.notes)


def test_folders_count_toward_the_entry_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_WALK_ENTRIES", 50)
    for index in range(60):
        (tmp_path / f"empty{index:02d}").mkdir()
    (tmp_path / "zz.py").write_text(SOURCE)
    walked = walk_submission(tmp_path)
    assert walked.files == ()
    assert "Stopped looking after 50 files and folders" in walked.notes[0]


def test_links_to_folders_are_not_entered_and_junk_is_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "manual_backprop.py").write_text(SOURCE)
    root = tmp_path / "submission"
    (root / "__MACOSX").mkdir(parents=True)
    (root / "__MACOSX" / "autograd_loop.py").write_text(SOURCE)
    (root / "linked").symlink_to(outside, target_is_directory=True)
    walked = walk_submission(root)
    assert walked.files == (root / "linked",)  # a link is a file to the caller, never entered


def test_a_gradescope_upload_nested_a_thousand_deep_still_picks_its_files(
    chain_root: Path,
) -> None:
    (chain_root / "manual_backprop.py").write_text(SOURCE)
    make_chain(chain_root, 1_100)
    picked, notes = pick_upload(chain_root, ASSIGNMENT)
    assert picked == chain_root
    assert notes == ()


def test_one_unreadable_submission_leaves_the_class_similarity_pass_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = prepare_submission

    def breaks_on_the_first(path: Path, assignment: object, dest: Path) -> object:
        if path.name == "broken":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, ASSIGNMENT, dest)

    monkeypatch.setattr(similarity, "prepare_submission", breaks_on_the_first)
    items = []
    for name in ("broken", "alice", "bob"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manual_backprop.py").write_text(SOURCE)
        items.append(BatchItem(name, tmp_path / name))
    sources = similarity.part_sources(items, ASSIGNMENT)
    assert sorted(sources) == ["alice", "bob"]


def test_a_source_too_large_to_fingerprint_is_named_not_compared() -> None:
    huge = SOURCE + "a = 1\n" * (similarity.MAX_COMPARED_CHARS // 6 + 1)
    sources = {"alice": {"manual_backprop": huge}, "bob": {"manual_backprop": SOURCE}}
    not_compared: list[str] = []
    similarity.find_similar_pairs(sources, ASSIGNMENT, not_compared)
    assert not_compared == ["alice/manual_backprop.py"]
