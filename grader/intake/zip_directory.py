"""A zip's central directory, cut down to the entries that may hold an assignment file.

zipfile opens an archive by reading every record of its central directory, so one record it
cannot read spoils the whole archive, and a directory of a million records costs seconds
before anything can be counted. This module walks the records where zipfile finds them (its
own end-record reader, on its private names), keeps only the relevant ones that zipfile reads
alone, and hands back an archive of those for `grader.intake.collect` to open.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

# zipfile's own reader of the end records: the central directory walked here (see
# `readable_relevant_records`) is then the one zipfile would read.
from zipfile import (  # type: ignore[attr-defined]
    _ECD_LOCATION,
    _ECD_OFFSET,
    _ECD_SIGNATURE,
    _ECD_SIZE,
    _EndRecData,
    sizeEndCentDir64,
    sizeEndCentDir64Locator,
    stringEndArchive64,
)

from grader.errors import SubmissionError

MAX_ARCHIVE_MEMBERS = 10_000
# A zip central-directory header: its signature, fixed size, and the general-purpose flag
# bit that says the entry's name is UTF-8.
_CENTRAL_HEADER = b"PK\x01\x02"
_CENTRAL_HEADER_SIZE = 46
_UTF8_FLAG = 0x800
# The most extra-field bytes an entry may carry: tools write a few dozen (timestamps, zip64
# sizes), and zipfile decodes them in time that grows with their count (9 ms for 64 KiB).
MAX_EXTRA_BYTES = 1024
# Entries that may hold an assignment file, by their names: longer than a path may be
# (PATH_MAX), or past so many copies, they are not taken (1,040 copies of a part file
# 32,000 folders deep cost the grading process 17 s and 300 MB).
MAX_ENTRY_NAME_BYTES = 4096
MAX_RELEVANT_ENTRIES = 100


def readable_relevant_records(
    path: Path,
    data: bytes,
    relevant: Callable[[str], bool],
    unreadable: list[str],
    notes: list[str],
) -> bytes:
    """`data` with a central directory of only the entries that may hold an assignment file
    and that zipfile can read, each judged alone.

    zipfile reads every record of the central directory when it opens an archive, and one it
    cannot read (an extra field that overruns itself, a version it does not support, a name
    flagged UTF-8 that is not) made the whole archive unreadable: every part 0 for a junk
    notes.txt. It also builds an object per record before the entries can be counted (1.4
    million records: 7 s and 800 MB). So the records are walked here, where zipfile finds
    them (its own end-record reader), counted as they come, and only the relevant ones are
    kept, the shallowest first (as the copies of a file are chosen); a relevant one that
    zipfile cannot read alone goes to `unreadable`, so it costs only the parts that need it.
    """
    start, offset, records = _central_directory(path, data)
    # (depth, name, position, length, flags, raw name, extra-field length)
    found: list[tuple[int, str, int, int, int, bytes, int]] = []
    for position, length in records:
        (flags,) = struct.unpack_from("<H", data, position + 8)
        name_length, extra_length = struct.unpack_from("<HH", data, position + 28)
        name_at = position + _CENTRAL_HEADER_SIZE
        raw_name = data[name_at : name_at + name_length]
        # zipfile cuts a name at a NUL byte (an empty name broke it); no file has one.
        if name_length > MAX_ENTRY_NAME_BYTES or b"\0" in raw_name:
            continue
        name = _entry_name(raw_name, flags).replace("\\", "/")
        if relevant(name.rsplit("/", 1)[-1]):
            found.append((name.count("/"), name, position, length, flags, raw_name, extra_length))
    found.sort(key=lambda entry: entry[:3])
    if len(found) > MAX_RELEVANT_ENTRIES:
        notes.append(
            f"{path.name} holds {len(found)} entries named like assignment files; only the "
            f"{MAX_RELEVANT_ENTRIES} in the fewest folders were looked at."
        )
    kept: list[bytes] = []
    for _, _, position, length, flags, raw_name, extra_length in found[:MAX_RELEVANT_ENTRIES]:
        record = bytearray(data[position : position + length])
        if flags & _UTF8_FLAG and not _is_utf8(raw_name):
            # zipfile then reads the name as cp437, which never fails.
            struct.pack_into("<H", record, 8, flags & ~_UTF8_FLAG)
        # zipfile decodes extra fields record by record: 9 ms for one of 64 KiB.
        if extra_length > MAX_EXTRA_BYTES or not _opens_alone(bytes(record)):
            unreadable.append(_entry_name(raw_name, flags))
            continue
        kept.append(bytes(record))
    directory = b"".join(kept)
    return data[:start] + directory + _end_record(len(kept), len(directory), offset)


def _central_directory(path: Path, data: bytes) -> tuple[int, int, list[tuple[int, int]]]:
    """(start, declared offset, (position, length) of each record) of the archive's central
    directory, found where zipfile finds it (its own end-record reader), counted as walked."""
    end = _EndRecData(io.BytesIO(data))
    if not end:
        raise zipfile.BadZipFile("no end of central directory record")
    size, offset = end[_ECD_SIZE], end[_ECD_OFFSET]
    start = end[_ECD_LOCATION] - size
    if end[_ECD_SIGNATURE] == stringEndArchive64:
        start -= sizeEndCentDir64 + sizeEndCentDir64Locator
    if start < 0 or start + size > len(data):
        raise zipfile.BadZipFile("central directory outside the archive")
    records: list[tuple[int, int]] = []
    position = start
    while position < start + size:
        if len(records) >= MAX_ARCHIVE_MEMBERS:
            raise SubmissionError(
                f"{path.name} holds over {MAX_ARCHIVE_MEMBERS} entries; zip only your "
                "assignment files."
            )
        if data[position : position + 4] != _CENTRAL_HEADER:
            raise zipfile.BadZipFile("bad central directory record")
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, position + 28)
        length = _CENTRAL_HEADER_SIZE + name_length + extra_length + comment_length
        records.append((position, length))
        position += length
    return start, offset, records


def _entry_name(raw_name: bytes, flags: int) -> str:
    """An entry's name as zipfile decodes it, undecodable bytes replaced."""
    return raw_name.decode("utf-8" if flags & _UTF8_FLAG else "cp437", "replace")


def _end_record(entries: int, size: int, offset: int) -> bytes:
    """An end-of-central-directory record, without zip64 (archives are far under 4 GiB)."""
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, size, offset, 0)


def _opens_alone(record: bytes) -> bool:
    """Whether zipfile reads this central-directory record, in an archive of its own."""
    try:
        zipfile.ZipFile(io.BytesIO(record + _end_record(1, len(record), 0))).close()
    except Exception:  # whatever zipfile raises for it, the entry is left out alone
        return False
    return True


def _is_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
