"""Output files: written atomically (a reader never sees half a results.json), zips reproducibly."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Zip's epoch; any fixed stamp makes an archive a function of its files alone.
ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` that replaces it when the block ends without an error.

    The temporary keeps `path`'s suffix (readers that go by it, such as `prepare_submission`
    for a .zip, can check it first). On an error `path` is left as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        # mkstemp's 0600 would surprise whoever copies or serves the file.
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class ZipEntry:
    """One file of a zip: its name inside the archive and where its bytes come from."""

    name: str
    source: Path
    executable: bool = False


def write_zip(path: Path, entries: Iterable[ZipEntry]) -> None:
    """Write `entries` in their order with fixed stamps and permissions: same files, same bytes."""
    with zipfile.ZipFile(path, "w") as archive:
        for entry in entries:
            info = zipfile.ZipInfo(entry.name, date_time=ZIP_TIMESTAMP)
            info.create_system = 3  # Unix, so unzip restores the permission bits below
            info.external_attr = (0o100755 if entry.executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entry.source.read_bytes(), compresslevel=9)
