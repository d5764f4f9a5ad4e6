"""TensorBoard event files read on the trusted side (grader/grading/event_files.py): real
SummaryWriter output, and files crafted to break, exhaust or hang the reader."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
import torch
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from torch.utils.tensorboard import SummaryWriter

from grader.grading import event_files
from grader.grading.event_files import EventFileError, read_scalars


def written_by_summary_writer(folder: Path) -> dict[str, bytes]:
    writer = SummaryWriter(str(folder))
    for step in range(6):
        writer.add_scalar("loss/train", 1.0 / (step + 1), step)
    for epoch in range(2):
        writer.add_scalar("accuracy/val", 0.5 + epoch / 4, epoch, new_style=True)
    writer.add_histogram("weights", torch.arange(10.0), 0)
    writer.close()
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def record(payload: bytes) -> bytes:
    """One TFRecord framed as SummaryWriter frames it (length, checksums)."""
    header = struct.pack("<Q", len(payload))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + payload
        + struct.pack("<I", masked_crc32c(payload))
    )


def test_scalars_of_a_real_summary_writer_come_back_by_tag_in_order(tmp_path: Path) -> None:
    scalars = read_scalars(written_by_summary_writer(tmp_path))
    assert sorted(scalars) == ["accuracy/val", "loss/train"]
    assert [step for step, _ in scalars["loss/train"]] == list(range(6))
    assert scalars["loss/train"][2][1] == pytest.approx(1 / 3)
    assert scalars["accuracy/val"] == [(0, 0.5), (1, 0.75)]


def test_files_may_come_as_uint8_tensors(tmp_path: Path) -> None:
    files = written_by_summary_writer(tmp_path)
    as_tensors = {
        name: torch.frombuffer(bytearray(data), dtype=torch.uint8) for name, data in files.items()
    }
    assert read_scalars(as_tensors) == read_scalars(files)
    with pytest.raises(EventFileError, match="came back as list, not its bytes"):
        read_scalars({"events": [1, 2, 3]})  # type: ignore[dict-item]


def test_a_damaged_file_is_named_with_what_was_read(tmp_path: Path) -> None:
    files = written_by_summary_writer(tmp_path)
    (name, data), *_ = files.items()
    with pytest.raises(EventFileError, match=r"Log file 1 of 1 is damaged after 0 records"):
        read_scalars({name: b"\x00" * 7 + data})
    # A record claiming 2**60 bytes: the reader reads what is there, the length check fails.
    with pytest.raises(EventFileError, match="is damaged"):
        read_scalars({name: struct.pack("<Q", 1 << 60) + b"\x00" * 64})


def test_a_record_that_is_not_an_event_is_refused() -> None:
    # Well framed, but the payload is a protobuf field of a wire type Event cannot hold.
    with pytest.raises(EventFileError, match="Record 1 of log file 1 is not a TensorBoard event"):
        read_scalars({"events": record(b"\xff\xff\xff\xff")})


def test_files_over_the_size_cap_are_refused_before_parsing() -> None:
    with pytest.raises(EventFileError, match=r"hold 2\.0 MiB, more than the 1\.0 MiB"):
        read_scalars({"a": b"\x00" * (1 << 20), "b": b"\x00" * (1 << 20)}, max_bytes=1 << 20)


def test_too_many_scalars_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(event_files, "MAX_SCALARS", 5)
    with pytest.raises(EventFileError, match="more than 5 scalars"):
        read_scalars(written_by_summary_writer(tmp_path))


def _hangs(paths: list[str]) -> dict[str, object]:
    while True:
        time.sleep(1)


def test_a_reader_that_hangs_costs_its_bound_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stands for a file crafted to keep the parser busy: the bound is the same child's.
    monkeypatch.setattr(event_files, "_scalars_in", _hangs)
    with pytest.raises(EventFileError, match=r"took longer than 0\.5 s"):
        read_scalars({"events": record(b"")}, seconds=0.5)


def _allocates(paths: list[str]) -> dict[str, object]:
    hoard = [bytearray(64 << 20) for _ in range(64)]
    return {"scalars": {}, "held": len(hoard)}


def test_a_reader_that_blows_up_memory_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_files, "_scalars_in", _allocates)
    with pytest.raises(EventFileError, match="needed more than 512 MiB of memory"):
        read_scalars({"events": record(b"")})
