"""prepare_submission: only known files, read safely, problems reported per part."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from grader.course.manifest import choose_assignment, load_assignment
from grader.course.root import AssignmentChoiceNeeded
from grader.errors import SubmissionError
from grader.intake import source_check, submission
from grader.intake.collect import MAX_SOURCE_BYTES
from grader.intake.near_miss import near_miss_key
from grader.intake.submission import prepare_submission
from tests.support import ASSIGNMENT_DIR

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


def test_a_folder_holding_only_the_kit_zip_is_graded_from_the_zip(tmp_path: Path) -> None:
    # A class folder's entry, or a grade of a student's folder, as Gradescope grades it.
    folder = tmp_path / "student"
    folder.mkdir()
    archive = make_zip(
        folder / "pytorch_basics_submission.zip", {"manual_backprop.py": GOOD.encode()}
    )
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert prepared.sources["manual_backprop"] == "file"
    assert prepared.notes[0] == (
        f"Graded {archive.name}: the folder holds none of the assignment's files itself."
    )
    zipped = prepare_submission(archive, ASSIGNMENT, tmp_path / "clean-zip")
    assert prepared.sha256 == zipped.sha256
    # Loose files win over the archive, which is then left alone, with a note saying so.
    (folder / "autograd_loop.py").write_text(GOOD)
    loose = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean-loose")
    assert loose.sources["manual_backprop"] == "missing"
    assert loose.sources["autograd_loop"] == "file"
    assert f"Graded the loose files you uploaded; ignored {archive.name}." in loose.notes, (
        loose.notes
    )
    # A loose file that cannot be taken (a link) keeps the folder graded as it is.
    (folder / "autograd_loop.py").unlink()
    (folder / "autograd_loop.py").symlink_to(tmp_path / "elsewhere.py")
    linked = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean-linked")
    assert linked.sources["autograd_loop"] == "missing"


def test_macos_hidden_copies_are_never_graded_for_the_student_s_file(tmp_path: Path) -> None:
    # A folder copied from a Mac to a shared drive gets a "._" copy (resource fork) of each
    # file: it sorts before the student's own and holds no zip or notebook.
    resource_fork = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "
    folder = tmp_path / "student"
    folder.mkdir()
    archive = make_zip(folder / "submit.zip", {"manual_backprop.py": GOOD.encode()})
    (folder / f"._{archive.name}").write_bytes(resource_fork)
    prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean")
    assert prepared.sources["manual_backprop"] == "file"
    assert prepared.notes == (
        f"Graded {archive.name}: the folder holds none of the assignment's files itself.",
    )
    # A renamed notebook is the only notebook, whatever hidden copy lies beside it.
    archive.unlink()
    (folder / f"._{archive.name}").unlink()
    notebook = folder / "lab1_final.ipynb"
    shutil.copy(ASSIGNMENT_DIR / "walkthrough.ipynb", notebook)
    (folder / f"._{notebook.name}").write_bytes(resource_fork)
    from_notebook = prepare_submission(folder, ASSIGNMENT, tmp_path / "clean-notebook")
    assert "no notebook was graded" not in " ".join(from_notebook.notes)
    assert any(
        "Graded lab1_final.ipynb as the assignment's notebook" in note
        for note in from_notebook.notes
    ), from_notebook.notes


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
    import grader.intake.collect

    monkeypatch.setattr(grader.intake.collect, "MAX_ARCHIVE_BYTES", 1000)
    archive = make_zip(tmp_path / "big.zip", {"manual_backprop.py": os.urandom(4000)})
    with pytest.raises(SubmissionError, match="limit"):
        prepare_submission(archive, ASSIGNMENT, tmp_path / "clean")


def _flag_names_utf8(archive: Path, replacements: dict[bytes, bytes]) -> None:
    """Swap entry names for same-length invalid bytes and mark every name as UTF-8."""
    data = archive.read_bytes()
    for old, new in replacements.items():
        assert len(old) == len(new)
        data = data.replace(old, new)
    patched = bytearray(data)
    for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        position = patched.find(signature)
        while position >= 0:
            (flags,) = struct.unpack_from("<H", patched, position + flag_offset)
            struct.pack_into("<H", patched, position + flag_offset, flags | 0x800)
            position = patched.find(signature, position + 4)
    archive.write_bytes(bytes(patched))


def test_a_zip_entry_falsely_flagged_utf8_costs_only_itself(tmp_path: Path) -> None:
    """A latin-1 name flagged UTF-8 made zipfile refuse the whole archive; now a junk entry
    so named costs nothing, and an assignment file so named only its part."""
    archive = make_zip(
        tmp_path / "sub.zip",
        {
            "Jose/manual_backprop.py": GOOD.encode(),
            "two_layer_net.py": GOOD.encode(),
            "Jose/notes.txt": b"my notes\n",
        },
    )
    _flag_names_utf8(archive, {b"Jose/": b"Jos\xe9/"})
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["two_layer_net.py"]
    assert list(prepared.problems) == ["manual_backprop"]
    assert "Could not read Jos" in prepared.problems["manual_backprop"]


@pytest.mark.parametrize("codec", ["hex", "zlib", "rot13"])
def test_a_coding_line_naming_a_binary_codec_costs_only_its_part(
    tmp_path: Path, codec: str
) -> None:
    (tmp_path / "manual_backprop.py").write_text(f"# coding: {codec}\n{GOOD}")
    (tmp_path / "autograd_loop.py").write_text(GOOD)
    prepared = prepare_submission(tmp_path, ASSIGNMENT, tmp_path / "out")
    assert "not a text encoding" in prepared.problems["manual_backprop"]
    assert "autograd_loop" not in prepared.problems
    assert sorted(prepared.files) == ["autograd_loop.py"]


def test_a_source_too_complex_to_compile_in_time_costs_only_its_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source_check, "SOURCE_CHECK_SECONDS", 0.5)
    (tmp_path / "custom_sigmoid.py").write_text('x = f"' + "{1}" * 300_000 + '"\n')
    (tmp_path / "manual_backprop.py").write_text(GOOD)
    prepared = prepare_submission(tmp_path, ASSIGNMENT, tmp_path / "out")
    assert prepared.problems == {
        "custom_sigmoid": "custom_sigmoid.py is too complex to check in 0.5 s; simplify it "
        "(split very long expressions, f-strings or literals)."
    }
    assert sorted(prepared.files) == ["manual_backprop.py"]
    assert prepared.sources["custom_sigmoid"] == "file"


def test_any_failure_reading_the_notebook_costs_only_the_parts_it_would_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(submission, "merge_notebook_parts", broken)
    (tmp_path / "manual_backprop.py").write_text(GOOD)
    (tmp_path / "walkthrough.ipynb").write_text("{}")
    prepared = prepare_submission(tmp_path, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["manual_backprop.py"]
    assert "manual_backprop" not in prepared.problems
    assert "The notebook could not be read (TypeError)" in prepared.problems["autograd_loop"]
    assert any("could not be read" in note for note in prepared.notes)


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("Two_Layer_Net.py", "two_layer_net.py"),
        ("custom_sigmoid (1).py", "custom_sigmoid.py"),
        ("custom_sigmoid - Copy.py", "custom_sigmoid.py"),
        ("manual_backprop.py.txt", "manual_backprop.py"),
        ("dataloader-training.py", "dataloader_training.py"),
        ("Device Benchmark copy 2.py", "device_benchmark.py"),
    ],
)
@pytest.mark.parametrize("container", ["folder", "zip"])
def test_a_lone_near_miss_is_graded_in_place_of_the_missing_file(
    tmp_path: Path, name: str, wanted: str, container: str
) -> None:
    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / name).write_text(GOOD)
    (folder / "autograd_loop.py").write_text(GOOD)
    path = folder
    if container == "zip":
        path = make_zip(tmp_path / "hw.zip", {f"hw/{name}": GOOD.encode()})
    prepared = prepare_submission(path, ASSIGNMENT, tmp_path / "out")
    assert prepared.files[wanted].read_text() == GOOD
    assert prepared.problems == {}
    shown = f"hw/{name}" if container == "zip" else name
    assert f"{wanted} is missing, so {shown} was graded in its place" in " ".join(prepared.notes)
    assert f"rename {shown} to {wanted}" in " ".join(prepared.notes)


def test_several_near_misses_are_all_named_and_none_is_graded(tmp_path: Path) -> None:
    for name in ("Two_Layer_Net.py", "two_layer_net (1).py"):
        (tmp_path / name).write_text(GOOD)
    prepared = prepare_submission(tmp_path, ASSIGNMENT, tmp_path / "out")
    assert "two_layer_net.py" not in prepared.files
    assert prepared.sources["two_layer_net"] == "missing"
    problem = prepared.problems["two_layer_net"]
    assert "Two_Layer_Net.py, two_layer_net (1).py" in problem
    assert "rename it to two_layer_net.py" in problem
    assert not any("Two_Layer_Net.py" in note for note in prepared.notes), "said twice"


def test_an_exact_name_wins_over_near_misses(tmp_path: Path) -> None:
    (tmp_path / "two_layer_net.py").write_text(GOOD)
    (tmp_path / "Two_Layer_Net.py").write_text("broken(\n")
    prepared = prepare_submission(tmp_path, ASSIGNMENT, tmp_path / "out")
    assert prepared.files["two_layer_net.py"].read_text() == GOOD
    assert not any("Two_Layer_Net.py" in note for note in prepared.notes)


@pytest.mark.parametrize(
    "name",
    ["two_layer_net.pyc", "._two_layer_net.py", "two_layer_net.ipynb", "my_two_layer_net.py"],
)
def test_other_files_are_not_near_misses(name: str) -> None:
    assert near_miss_key(name) != "two_layer_net.py"


def _damage_member(archive: Path, name: str, how: str) -> None:
    """Damage one member of `archive` the way a broken zip tool (or a student) would."""
    with zipfile.ZipFile(archive) as handle:
        offset = handle.getinfo(name).header_offset
    data = bytearray(archive.read_bytes())
    name_length, extra_length = struct.unpack_from("<HH", data, offset + 26)
    start = offset + 30 + name_length + extra_length
    if how == "deflate":
        data[start] = 0xFF  # block type 3: zlib.error
    elif how == "lzma":
        data[start + 4] = 0xFF  # lc/lp/pb past 224: lzma.LZMAError
    else:  # the local header's name claims UTF-8 and is not: UnicodeDecodeError
        (flags,) = struct.unpack_from("<H", data, offset + 6)
        struct.pack_into("<H", data, offset + 6, flags | 0x800)
        data[offset + 30] = 0xFF
    archive.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["deflate", "lzma", "local-name"])
def test_a_damaged_zip_member_costs_only_the_part_that_needs_it(tmp_path: Path, how: str) -> None:
    archive = tmp_path / "sub.zip"
    method = zipfile.ZIP_LZMA if how == "lzma" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(archive, "w", method) as handle:
        handle.writestr("my\x1b[31mwork/manual_backprop.py", GOOD * 20)
        handle.writestr("my\x1b[31mwork/autograd_loop.py", GOOD)
    _damage_member(archive, "my\x1b[31mwork/manual_backprop.py", how)
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["autograd_loop.py"]
    assert prepared.sources["manual_backprop"] == "missing"
    problem = prepared.problems["manual_backprop"]
    assert problem.startswith("Could not read my")
    assert "manual_backprop.py from sub.zip" in problem and "Create the zip again" in problem
    assert "\x1b" not in problem
    assert "autograd_loop" not in prepared.problems


def test_a_damaged_notebook_member_costs_only_the_parts_it_would_give(tmp_path: Path) -> None:
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("walkthrough.ipynb", "{}" + " " * 500)
        handle.writestr("manual_backprop.py", GOOD)
    _damage_member(archive, "walkthrough.ipynb", "deflate")
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["manual_backprop.py"]
    assert "manual_backprop" not in prepared.problems
    problem = prepared.problems["autograd_loop"]
    assert "Could not read walkthrough.ipynb from sub.zip" in problem
    assert "Parts without their own .py file" in problem
    assert problem in prepared.notes


def _old_digest(files: dict[str, bytes]) -> str:
    """The digest before lengths framed it: names and bytes joined by NUL bytes."""
    digest = hashlib.sha256()
    for name, data in files.items():
        digest.update(name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def test_the_digest_tells_apart_a_file_holding_another_file_and_its_name(
    tmp_path: Path,
) -> None:
    # Under NUL-joined names and bytes, one file holding `\0autograd_loop.py\0` and the
    # next file's bytes hashed like both files: a batch kept the honest grade for it.
    manual, autograd = GOOD.encode(), b"def train_autograd():\n    return []\n"
    honest, forged = tmp_path / "honest", tmp_path / "forged"
    honest.mkdir()
    forged.mkdir()
    (honest / "manual_backprop.py").write_bytes(manual)
    (honest / "autograd_loop.py").write_bytes(autograd)
    (forged / "manual_backprop.py").write_bytes(manual + b"\0autograd_loop.py\0" + autograd)
    both = {"manual_backprop.py": manual, "autograd_loop.py": autograd}
    assert _old_digest(both) == _old_digest(
        {"manual_backprop.py": manual + b"\0autograd_loop.py\0" + autograd}
    )
    honest_digest = prepare_submission(honest, ASSIGNMENT, tmp_path / "a").sha256
    forged_digest = prepare_submission(forged, ASSIGNMENT, tmp_path / "b").sha256
    assert honest_digest != forged_digest
    # A report written with the old digest never matches the new one: it is graded again.
    assert honest_digest != _old_digest(both)


def test_the_digest_records_why_a_part_has_no_file(tmp_path: Path) -> None:
    """Missing, oversized (and its size), several near misses: each digests apart."""
    variants = {
        "missing": {},
        "oversized": {"manual_backprop.py": b"#" * (MAX_SOURCE_BYTES + 1)},
        "larger": {"manual_backprop.py": b"#" * (MAX_SOURCE_BYTES + 2)},
        "near misses": {"Manual_Backprop.py": b"x = 1\n", "manual-backprop.py": b"x = 1\n"},
    }
    digests = set()
    for index, files in enumerate(variants.values()):
        folder = tmp_path / str(index)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        prepared = prepare_submission(folder, ASSIGNMENT, tmp_path / f"out{index}")
        assert "manual_backprop.py" not in prepared.files
        digests.add(prepared.sha256)
    assert len(digests) == len(variants)


def test_a_damaged_notebook_member_leaves_the_assignment_to_choose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guessing the assignment reads notebook members too: a damaged one only stops the guess."""
    root = tmp_path / "course"
    for name in ("first", "second"):
        folder = root / "assignments" / name
        folder.mkdir(parents=True)
        (folder / "assignment.toml").write_text(
            f"[assignment]\nid = '{name}'\nnotebook = 'walkthrough.ipynb'\n[[parts]]\n"
            f"id = 'p{name}'\nfile = 'p{name}.py'\npoints = 1\n"
        )
    monkeypatch.delenv("GRADER_COURSE", raising=False)
    monkeypatch.chdir(root)
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("walkthrough.ipynb", '{"cells": [{"source": "# part: psecond"}]}' * 20)
    _damage_member(archive, "walkthrough.ipynb", "deflate")
    with pytest.raises(AssignmentChoiceNeeded):
        choose_assignment(None, archive)


def _with_central_records(archive: Path, copies: int) -> None:
    """Repeat the archive's one central-directory record `copies` times (entry counts fixed)."""
    data = archive.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    (size, offset) = struct.unpack_from("<II", data, end + 12)
    record = data[offset : offset + size]
    tail = bytearray(data[end:])
    struct.pack_into("<HHI", tail, 8, copies, copies, size * copies)
    archive.write_bytes(data[:offset] + record * copies + bytes(tail))


def test_a_central_directory_flood_is_refused_before_zipfile_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zipfile builds an object per record before its entries can be counted: 1.4 million
    records took it 7 s and 800 MB. The records are counted first, without it."""
    archive = make_zip(tmp_path / "sub.zip", {"notes.txt": b"my notes\n"})
    _with_central_records(archive, 20_000)
    opened: list[object] = []
    monkeypatch.setattr(zipfile, "ZipFile", lambda *args, **kwargs: opened.append(args))
    with pytest.raises(SubmissionError, match="holds over 10000 entries"):
        prepare_submission(archive, ASSIGNMENT, tmp_path / "out")
    assert opened == []


def test_a_dataset_zip_inside_the_zip_is_not_counted(tmp_path: Path) -> None:
    """Only the archive's own records count: a stored zip of 12,000 files is one entry."""
    inner = make_zip(tmp_path / "digits.zip", {f"{i}.txt": b"" for i in range(12_000)})
    outer = tmp_path / "sub.zip"
    with zipfile.ZipFile(outer, "w") as archive:  # zip stores what it cannot shrink
        archive.writestr("manual_backprop.py", GOOD)
        archive.write(inner, "data/digits.zip", compress_type=zipfile.ZIP_STORED)
    prepared = prepare_submission(outer, ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["manual_backprop.py"]


def _damaged_extra(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.extra = struct.pack("<HH", 0xCAFE, 16)  # claims 16 bytes of data, has none
    return info


def test_an_entry_zipfile_cannot_read_costs_only_its_part(tmp_path: Path) -> None:
    """zipfile reads every central record when it opens an archive: one junk entry whose
    extra field overruns itself (unzip extracts it anyway) made every part score 0. A junk
    entry is not read at all; an assignment file's is left out alone, with a note."""
    huge_extra = zipfile.ZipInfo("autograd_loop.py")
    huge_extra.extra = b"\x99\x99\x00\x00" * 1000  # decoded record by record
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as archive:
        archive.writestr("manual_backprop.py", GOOD)
        archive.writestr(_damaged_extra("notes.txt"), b"my notes\n")
        archive.writestr(_damaged_extra("two_layer_net.py"), GOOD)
        archive.writestr(huge_extra, GOOD)
    prepared = prepare_submission(tmp_path / "sub.zip", ASSIGNMENT, tmp_path / "out")
    assert sorted(prepared.files) == ["manual_backprop.py"]
    assert set(prepared.problems) == {"two_layer_net", "autograd_loop"}
    for part in ("two_layer_net", "autograd_loop"):
        assert "header in the zip is damaged" in prepared.problems[part]


def test_deep_and_repeated_copies_of_a_part_file_are_bounded(tmp_path: Path) -> None:
    """Every copy of a part file is a candidate: 1,040 of them 32,000 folders deep cost the
    grading process 17 s and 300 MB. Names longer than a path may be are not taken, nor
    copies past the hundredth."""
    entries = {"manual_backprop.py": GOOD.encode(), "a/" * 2100 + "two_layer_net.py": b"x\n"}
    entries |= {f"copy{i}/autograd_loop.py": GOOD.encode() for i in range(150)}
    prepared = prepare_submission(make_zip(tmp_path / "sub.zip", entries), ASSIGNMENT, tmp_path)
    assert sorted(prepared.files) == ["autograd_loop.py", "manual_backprop.py"]
    assert any("99 copies of autograd_loop.py" in note for note in prepared.notes)


def test_the_shallowest_copies_are_looked_at_whatever_their_order(tmp_path: Path) -> None:
    """Past the hundredth copy, entries were dropped in archive order: `zip -r` stored
    older drafts first, and a draft was graded instead of the top-level file."""
    entries = {f"hw/drafts/v{i:03d}/manual_backprop.py": b"x = 'draft'\n" for i in range(120)}
    entries["hw/manual_backprop.py"] = GOOD.encode()
    prepared = prepare_submission(make_zip(tmp_path / "sub.zip", entries), ASSIGNMENT, tmp_path)
    assert prepared.files["manual_backprop.py"].read_text() == GOOD
    assert any("only the 100 in the fewest folders" in note for note in prepared.notes)


def test_a_junk_entry_whose_name_starts_with_a_nul_byte_is_ignored(tmp_path: Path) -> None:
    """zipfile cuts a name at its NUL byte: the empty name made the grade a grader error."""
    archive = make_zip(
        tmp_path / "sub.zip",
        {"manual_backprop.py": GOOD.encode(), "ZULNAME/manual_backprop.py": b"x = 1\n"},
    )
    archive.write_bytes(archive.read_bytes().replace(b"ZULNAME", b"\0ULNAME"))
    prepared = prepare_submission(archive, ASSIGNMENT, tmp_path / "out")
    assert prepared.files["manual_backprop.py"].read_text() == GOOD
