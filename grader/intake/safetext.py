"""Make text from a submission safe where it enters the trusted side's data model.

Student code chooses exception messages, printed output, names of files and folders and
notebook metadata. Any of these can hold lone surrogates (which no UTF-8 writer accepts),
terminal escapes, carriage returns or bidirectional overrides (which rewrite what a terminal,
a spreadsheet or a browser shows), or megabytes of text. Every such string passes through
`clean_text` (or `clean_name`, `entry_key` for names) before it is stored, so the writers
downstream never see anything they cannot encode or bound.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
# Surrogates (lone, or a file name's undecodable bytes under surrogateescape), C0 controls
# other than tab and newline, DEL, C1 controls (CSI and friends), and the bidirectional
# overrides and isolates that reorder what a reader sees.
_UNSAFE = re.compile("[\ud800-\udfff\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_NAME = re.compile("[\ud800-\udfff\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What may appear in an output file or folder name made from a submission's name.
_NOT_IN_KEY = re.compile(r"[^\w.\-+@=,() ]")
MAX_KEY_BYTES = 160
KEY_HASH_CHARS = 10
MAX_DATA_DEPTH = 32


def cut_marker(count: int, *, one_line: bool = False) -> str:
    marker = f"[... {count} characters cut ...]"
    return f" {marker} " if one_line else f"\n{marker}\n"


def cap_text(text: str, limit: int, *, one_line: bool = False) -> str:
    """`text` at most `limit` characters long: its head and tail around a marker.

    `one_line` puts the marker between spaces rather than on a line of its own.
    """
    if len(text) <= limit:
        return text
    # Room for the marker of the largest count this text could need.
    room = max(0, limit - len(cut_marker(len(text), one_line=one_line)))
    head = room * 3 // 4
    tail = room - head
    cut = len(text) - head - tail
    marker = cut_marker(cut, one_line=one_line)
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


def clean_text(text: str, limit: int) -> str:
    """Student text, capped and stripped of what breaks encoders, terminals and CSV cells.

    Cut first, so the work is bounded by `limit` whatever the input's size.
    """
    if not isinstance(text, str):
        text = str(text)
    text = cap_text(text, limit)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _UNSAFE.sub(REPLACEMENT, text)


def clean_name(text: str, limit: int = 300) -> str:
    """A one-line name for display: `clean_text` without line breaks or tabs.

    Its cut marker stays on the line: a line break there would be replaced like any other.
    """
    return _UNSAFE_IN_NAME.sub(REPLACEMENT, cap_text(str(text), limit, one_line=True))


def entry_key(name: str) -> str:
    """A file name for output made from a directory entry's name (as `os.fsdecode` gives it).

    A name that is already safe is kept as it is; any other name is cleaned and gets a short
    hash of its raw bytes (`hashed_entry_key`), so two names that clean to the same text stay
    apart and the key of a name never depends on which other entries exist.
    """
    cleaned = _cleaned_entry_name(name)
    if cleaned == name and len(os.fsencode(name)) <= MAX_KEY_BYTES:
        return name
    return hashed_entry_key(name)


def hashed_entry_key(name: str) -> str:
    """The cleaned `name`, then `~` and a hash of its raw bytes; safe names never hold `~`."""
    cleaned = _cleaned_entry_name(name)
    while len(cleaned.encode("utf-8")) > MAX_KEY_BYTES - KEY_HASH_CHARS - 1:
        cleaned = cleaned[:-1]
    return f"{cleaned}~{hashlib.sha256(os.fsencode(name)).hexdigest()[:KEY_HASH_CHARS]}"


def _cleaned_entry_name(name: str) -> str:
    readable = os.fsencode(name).decode("utf-8", errors="replace")
    cleaned = _NOT_IN_KEY.sub("_", _UNSAFE_IN_NAME.sub("_", readable)).strip()
    return "_" + cleaned if cleaned in ("", ".", "..") or cleaned.startswith(".") else cleaned


def clean_data(value: Any, limit: int, depth: int = 0) -> Any:
    """JSON-like data with every string (keys included) passed through `clean_text`."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if depth >= MAX_DATA_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {
            clean_text(str(key), limit): clean_data(item, limit, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [clean_data(item, limit, depth + 1) for item in value]
    return value


def fit_texts(texts: list[str], total: int, *, floor: int = 200) -> list[str]:
    """Cap every text at one common length so that together they stay near `total` characters.

    The longest texts are cut first; none is cut below `floor` characters (so the bound is
    `total + floor * len(texts)`).
    """
    lengths = sorted(len(text) for text in texts)
    if sum(lengths) <= total:
        return texts
    # The largest common cap c with sum(min(length, c)) <= total.
    remaining, cap = total, 0
    for index, length in enumerate(lengths):
        share = remaining // (len(lengths) - index)
        if length > share:
            cap = share
            break
        remaining -= length
    cap = max(cap, floor)
    return [cap_text(text, cap) for text in texts]
