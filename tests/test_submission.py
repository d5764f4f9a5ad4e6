"""prepare_submission: only known files, read safely, problems reported per part."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.errors import SubmissionError
from grader.submission import MAX_SOURCE_BYTES, prepare_submission

ASSIGNMENT = load_assignment("pytorch_basics")
GOOD = "def forward_backward(x, y, w1, w2):\n    return x\n"


def make_zip(path: Path, entries: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def test_zip_with_top_folder_and_junk_keeps_only_known_files(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "sub.zip",
        {
            "hw/manual_backprop.py": GOOD.encode(),
            "__MACOSX/hw/._manual_backprop.py": b"\0\1junk",
            "hw/.DS_Store": b"\0",
            "hw/__pycache__/manual_backprop.cpython-311.pyc": b"\0",
            "hw/conftest.py": b"import os; os._exit(0)",
            "hw/torch.py": b"raise SystemExit",
        },
    )
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "clean")
    assert sorted(p.name for p in prepared.directory.iterdir()) == ["manual_backprop.py"]
    assert prepared.sources["manual_backprop"] == "file"
    assert prepared.sources["autograd_loop"] == "missing"
    assert prepared.problems == {}


def test_unsafe_archive_entries_are_refused_and_noted(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "evil.zip",
        {"../manual_backprop.py": GOOD.encode(), "/abs/autograd_loop.py": b"x = 1\n"},
        links={"custom_sigmoid.py": "/etc/passwd"},
    )
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "clean")
    assert prepared.files == {}
    notes = "\n".join(prepared.notes)
    assert "'../manual_backprop.py'" in notes and "'/abs/autograd_loop.py'" in notes
    assert "Refused link 'custom_sigmoid.py'" in notes
    assert not (tmp_path / "manual_backprop.py").exists()


def test_encoding_problems_are_reported_per_part(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "manual_backprop.py").write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")  # BOM + CRLF
    (folder / "autograd_loop.py").write_bytes("x = 'é'\n".encode("latin-1"))
    (folder / "custom_sigmoid.py").write_bytes(b"\x7fELF\0\0\0")
    (folder / "two_layer_net.py").write_text("def f(:\n")
    (folder / "dataloader_training.py").write_text("x = 1\n" * (MAX_SOURCE_BYTES // 5))
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert (tmp_path / "clean" / "manual_backprop.py").read_text() == "x = 1\ny = 2\n"
    assert "manual_backprop" not in prepared.problems
    assert "not valid UTF-8" in prepared.problems["autograd_loop"]
    assert "not a text file" in prepared.problems["custom_sigmoid"]
    assert "syntax error on line 1" in prepared.problems["two_layer_net"]
    assert "over the 1024 KiB limit" in prepared.problems["dataloader_training"]
    assert prepared.sources["device_benchmark"] == "missing"


def test_folder_symlinks_are_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()
    secret = tmp_path / "secret.py"
    secret.write_text("SECRET = 1\n")
    (folder / "manual_backprop.py").symlink_to(secret)
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert prepared.files == {}
    assert any("links are not followed" in note for note in prepared.notes)


def test_the_shallowest_copy_wins_and_is_noted(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    (folder / "old").mkdir(parents=True)
    (folder / "manual_backprop.py").write_text("top = 1\n")
    (folder / "old" / "manual_backprop.py").write_text("old = 1\n")
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert prepared.files["manual_backprop.py"].read_text() == "top = 1\n"
    assert any("2 copies of manual_backprop.py" in note for note in prepared.notes)


def test_same_files_give_the_same_hash_whatever_the_container(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "manual_backprop.py").write_text(GOOD)
    archive = make_zip(tmp_path / "s.zip", {"x/manual_backprop.py": GOOD.encode()})
    from_folder = prepare_submission(folder, ASSIGNMENT, tmp_path / "a")
    from_zip = prepare_submission(archive, ASSIGNMENT, tmp_path / "b")
    assert from_folder.sha256 == from_zip.sha256 != ""


@pytest.mark.parametrize("name", ["broken.zip", "missing-folder", "notes.txt"])
def test_unusable_paths_raise_a_submission_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name.endswith(".zip"):
        path.write_bytes(b"PK\3\4 definitely not a zip")
    elif name.endswith(".txt"):
        path.write_text("hello")
    with pytest.raises(SubmissionError):
        prepare_submission(path, ASSIGNMENT, tmp_path / "clean")


def test_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    (folder / "deeper").mkdir(parents=True)
    os.mkfifo(folder / "manual_backprop.py")  # reading it would block for ever
    (folder / "deeper" / "manual_backprop.py").write_text(GOOD)
    (folder / "autograd_loop.py").symlink_to("/dev/zero")
    (folder / "custom_sigmoid.py").mkdir()
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert prepared.files["manual_backprop.py"].read_text() == GOOD
    assert set(prepared.files) == {"manual_backprop.py"}
    notes = "\n".join(prepared.notes)
    assert "manual_backprop.py: not a regular file" in notes
    assert "autograd_loop.py: links are not followed" in notes


def test_a_coding_line_is_honoured_and_rewritten_to_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()
    source = "# -*- coding: latin-1 -*-\nNAME = 'Café'\n"
    (folder / "manual_backprop.py").write_bytes(source.encode("latin-1"))
    (folder / "autograd_loop.py").write_bytes(b"# coding: klingon\nx = 1\n")
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    clean = prepared.files["manual_backprop.py"].read_text(encoding="utf-8")
    assert clean == "# -*- coding: utf-8 -*-\nNAME = 'Café'\n"
    assert "unknown encoding: klingon" in prepared.problems["autograd_loop"]


def test_an_oversized_archive_is_refused_before_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grader.submission

    monkeypatch.setattr(grader.submission, "MAX_ARCHIVE_BYTES", 1000)
    archive = make_zip(tmp_path / "big.zip", {"manual_backprop.py": os.urandom(4000)})
    with pytest.raises(SubmissionError, match="limit"):
        prepare_submission(archive, ASSIGNMENT, tmp_path / "clean")
