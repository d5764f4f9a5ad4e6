"""Which part a test belongs to: its `@pytest.mark.part("id")`, else its file's name.

A test file `test_<part>.py` holds the tests of that part. One file may hold several parts'
tests by declaring the part: on a test or a class (`@pytest.mark.part("id")`), or for the
whole module (`pytestmark = pytest.mark.part("id")`); the closest declaration wins. Grading,
`validate`, `check` and `build public` all decide it here, so they agree on every test.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PART_MARKER = "part"
PART_MARKER_HELP = "part(id): the part this test belongs to (default: the file's test_<part>.py)"


def part_of_file(path: Path) -> str:
    """The part a test file's name gives: test_<part>.py."""
    return path.stem.removeprefix("test_")


def part_of_item(item: pytest.Item) -> str:
    """The part of a collected test: its closest part marker, else its file's name.

    A marker that does not hold exactly one string gives "", which names no part.
    """
    marker = item.get_closest_marker(PART_MARKER)
    if marker is None:
        return part_of_file(Path(str(item.path)))
    return _marked_part(marker)


def part_of_module(module: ModuleType, path: Path) -> str:
    """The part a whole test module declares (`pytestmark`), else its file's name."""
    marker = _part_mark(module)
    return part_of_file(path) if marker is None else _marked_part(marker)


def part_of_function(function: object, module: ModuleType, path: Path) -> str:
    """The part of a module-level test function: its own marker, else its module's part."""
    marker = _part_mark(function)
    return part_of_module(module, path) if marker is None else _marked_part(marker)


def _part_mark(owner: object) -> pytest.Mark | None:
    """The part marker `owner` (a module or a function) carries in its `pytestmark`."""
    marks: Any = getattr(owner, "pytestmark", [])
    for mark in marks if isinstance(marks, list | tuple) else [marks]:
        mark = getattr(mark, "mark", mark)  # a MarkDecorator holds its Mark
        if isinstance(mark, pytest.Mark) and mark.name == PART_MARKER:
            return mark
    return None


def _marked_part(marker: pytest.Mark) -> str:
    if len(marker.args) == 1 and not marker.kwargs and isinstance(marker.args[0], str):
        return marker.args[0]
    return ""
