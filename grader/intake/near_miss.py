"""Near-miss file names: a student's file name as students mangle it, undone.

Students submit `Two_Layer_Net.py` or `two_layer_net (1).py` for `two_layer_net.py`. Intake
grades a lone near miss in its place, and `check` and `submit` say what to rename: both read
names through this one key, so what `check` advises is what grading does.
"""

from __future__ import annotations

import re

# How student names are cut down to compare with the assignment's (see `near_miss_key`).
MAX_NAME_CHARS = 255
_COPY_SUFFIX = re.compile(r"(?:[ _-]*\(\d+\)|[ _-]+copy(?:[ _-]*\d+)?)+$")
_SEPARATORS = re.compile(r"[\s_-]+")


def near_miss_key(name: str) -> str:
    """`name` as students mangle it, undone: case, spaces, `-`, copy suffixes, extra extensions.

    `Two_Layer_Net.py`, `two-layer net.py`, `two_layer_net (1).py`, `two_layer_net copy.py`
    and `two_layer_net.py.txt` all give `two_layer_net.py`.
    """
    lowered = name.strip().lower()
    if lowered.startswith("."):  # hidden files (macOS's ._ copies) are never a student's
        return lowered
    # No file system makes longer names, and _COPY_SUFFIX backtracks in time quadratic in
    # the name: a zip entry may be named with 65,535 bytes of " (1)", 13 s of CPU each.
    if len(lowered) > MAX_NAME_CHARS:
        return lowered
    stem, dot, extension = lowered.partition(".py")
    if not dot or (extension and not re.fullmatch(r"(\.[a-z0-9]{1,8})+", extension)):
        return lowered
    stem = _COPY_SUFFIX.sub("", stem)
    return _SEPARATORS.sub("_", stem).strip("_") + ".py"


def near_misses(names: list[str], wanted: list[str]) -> dict[str, list[str]]:
    """For each wanted name absent from `names`, the names in `names` that nearly match it."""
    loose = {near_miss_key(name): name for name in wanted if name not in names}
    found: dict[str, list[str]] = {}
    for name in names:
        if name not in wanted and near_miss_key(name) in loose:
            found.setdefault(loose[near_miss_key(name)], []).append(name)
    return found


def near_miss_advice(wanted: str, candidates: list[str]) -> str:
    """What to rename, for a missing file with near-miss candidates."""
    if len(candidates) == 1:
        return f"rename {candidates[0]} to {wanted} (the grader looks for that exact name)"
    return (
        f"{', '.join(candidates)} are all named like {wanted}: keep the right one and rename "
        f"it to {wanted}"
    )
