"""Reading a stream of JSON objects, one a line, as it arrives, within a bound.

`check` reads the events its pytest process writes and `batch` the replies of its workers;
both read what has arrived so far, keep an incomplete last line for the next read, and must
not let a writer that never ends a line grow that buffer without limit.
"""

from __future__ import annotations

import json
from typing import Any


class JsonLines:
    """Turns chunks of bytes into the JSON objects on their complete lines.

    A line that is not a JSON object is skipped, and so is a line longer than
    `max_line_bytes` (it is dropped as it arrives, never held whole).
    """

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._pending = b""
        self._overlong = False

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The objects on the lines that `chunk` completes, in order."""
        *lines, tail = (self._pending + chunk).split(b"\n")
        objects: list[dict[str, Any]] = []
        for line in lines:
            if self._overlong:
                self._overlong = False  # this line's start was dropped: skip its end too
                continue
            if len(line) <= self.max_line_bytes and (value := _decode(line)) is not None:
                objects.append(value)
        if len(tail) > self.max_line_bytes:
            tail, self._overlong = b"", True
        self._pending = tail
        return objects


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:  # not UTF-8 is a ValueError too
        return None
    return value if isinstance(value, dict) else None
