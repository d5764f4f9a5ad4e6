"""Read the scalars of TensorBoard event files a student's training wrote, on the trusted side.

Event files are student bytes: a record can claim any length, a protobuf any structure, and
the reader is C and Python code that holds the GIL while it parses. So the files are size-capped
here, then parsed by tensorboard's own record reader and `Event` protobuf in a bounded child
(grader/intake/bounded.py: wall time and address space), which sends back plain JSON. A file that
hangs, exhausts or crashes the reader costs that bound and fails the test with a message; it
never stops the grading process. Hidden tests import `read_scalars` from `grader.testing`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from grader.intake.bounded import CRASHED, OUT_OF_MEMORY, TIMEOUT, run_bounded

# All event files of one log folder together: a few epochs of scalars take kilobytes
# (a SummaryWriter record of one scalar is about 50 bytes).
MAX_EVENT_BYTES = 8 << 20
# Scalars returned, all tags together: bounds the JSON the child sends back.
MAX_SCALARS = 200_000
READ_SECONDS = 10.0
READ_MEMORY_BYTES = 512 << 20

Scalars = dict[str, list[tuple[int, float]]]


class EventFileError(AssertionError):
    """The log files could not be read: the test fails with this message (for the student)."""


def read_scalars(
    files: Mapping[str, bytes | torch.Tensor],
    *,
    max_bytes: int = MAX_EVENT_BYTES,
    seconds: float = READ_SECONDS,
) -> Scalars:
    """The scalars logged in `files` (event file name -> its bytes, or a uint8 tensor of them).

    Returns tag -> [(step, value), ...] in the order they were written, files taken in name
    order (SummaryWriter names them by creation time). Raises EventFileError, with what to
    check, when the files are too large, damaged, or not event files.
    """
    blobs = {str(name): _as_bytes(name, data) for name, data in files.items()}
    total = sum(len(blob) for blob in blobs.values())
    if total > max_bytes:
        raise EventFileError(
            f"Your TensorBoard log files hold {total / 2**20:.1f} MiB, more than the "
            f"{max_bytes / 2**20:.1f} MiB this test reads. Log scalars (add_scalar), not "
            "images, histograms or graphs, and only into the log folder you are given."
        )
    # Imported here, before the fork: the child then parses without paying the import.
    from tensorboard.compat.proto import event_pb2  # noqa: F401
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="grader-events-") as folder:
        # Student names never become paths: the files are numbered in name order.
        paths = []
        for index, name in enumerate(sorted(blobs)):
            path = Path(folder, f"{index:04d}.tfevents")
            path.write_bytes(blobs[name])
            paths.append(str(path))
        outcome = run_bounded(
            [lambda: _scalars_in(paths)], seconds=seconds, memory_bytes=READ_MEMORY_BYTES
        )[0]
    if outcome.failure:
        why = {
            TIMEOUT: f"took longer than {seconds:g} s",
            OUT_OF_MEMORY: f"needed more than {READ_MEMORY_BYTES >> 20} MiB of memory",
            CRASHED: "crashed the reader",
        }.get(outcome.failure, "failed")
        raise EventFileError(
            f"Reading your TensorBoard log files {why}, so they could not be checked. Write "
            "them only with torch.utils.tensorboard.SummaryWriter, and close it."
        )
    value = outcome.value
    if not isinstance(value, dict):
        raise EventFileError("Your TensorBoard log files could not be read.")
    if "error" in value:
        raise EventFileError(str(value["error"]))
    return {
        str(tag): [(int(step), float(number)) for step, number in points]
        for tag, points in value["scalars"].items()
    }


def _as_bytes(name: object, data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if type(data) is torch.Tensor and data.dtype == torch.uint8 and data.dim() == 1:
        return data.numpy().tobytes()
    raise EventFileError(
        f"The log file {str(name)[:100]!r} came back as {type(data).__name__}, not its bytes."
    )


def _scalars_in(paths: list[str]) -> dict[str, Any]:
    """In the bounded child: {"scalars": {tag: [[step, value], ...]}} or {"error": message}."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

    scalars: dict[str, list[list[float]]] = {}
    count = 0
    for number, path in enumerate(paths, start=1):
        reader = pywrap_tensorflow.PyRecordReader_New(path)
        records = 0
        while True:
            try:
                reader.GetNext()
            except errors.OutOfRangeError:
                break
            except errors.DataLossError:
                return {
                    "error": f"Log file {number} of {len(paths)} is damaged after {records} "
                    "records (a record's length or checksum is wrong), so it is not a "
                    "TensorBoard event file as SummaryWriter writes it."
                }
            records += 1
            try:
                event = event_pb2.Event.FromString(reader.record())
            except DecodeError:
                return {
                    "error": f"Record {records} of log file {number} is not a TensorBoard "
                    "event, so the file is not one SummaryWriter wrote."
                }
            for value in event.summary.value:
                scalar = _scalar(value)
                if scalar is None:
                    continue
                count += 1
                if count > MAX_SCALARS:
                    return {
                        "error": f"Your log files hold more than {MAX_SCALARS} scalars: log "
                        "once a step or once an epoch, as the assignment asks."
                    }
                scalars.setdefault(value.tag, []).append([event.step, scalar])
    return {"scalars": scalars}


def _scalar(value: Any) -> float | None:
    """A summary value's number: `simple_value`, or a one-number float tensor (new style)."""
    if value.WhichOneof("value") == "simple_value":
        return float(value.simple_value)
    if value.WhichOneof("value") == "tensor" and not value.tensor.tensor_shape.dim:
        numbers = list(value.tensor.float_val) or list(value.tensor.double_val)
        if len(numbers) == 1:
            return float(numbers[0])
    return None
