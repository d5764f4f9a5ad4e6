"""`@public_fixture`: a public test's expected values, recorded from the reference by staff.

In a public test file `public_tests/test_<part>.py`:

    @public_fixture
    def expected(reference: ModuleType) -> dict[str, Any]:
        x = torch.randn(4, 3, generator=torch.Generator().manual_seed(3001))
        return {"x": x, "y": reference.double(x)}

defines the fixture `expected` for the file's tests. `python -m grader build public` calls the
function with the part's reference module and writes what it returns (tensors, numbers,
strings, lists and dicts of them) to `public_fixtures/<part>.pt`; in `check` the fixture reads
that file back with `torch.load(..., weights_only=True)` and never needs the reference. The
function's body ships to students: it may show how the reference is called, never how it
works.

Its part is the module's (`pytestmark = pytest.mark.part("id")`, else the file's name,
grader/course/part_marker.py); in a file holding several parts' tests, name it:
`@public_fixture(part="id")`, one per part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from grader.course.part_marker import part_of_module

# Where a fixture function keeps what `build public` runs (see grader/authoring/fixtures.py).
RECORDER_ATTRIBUTE = "grader_public_fixture"

Builder = Callable[[ModuleType], dict[str, Any]]


@dataclass(frozen=True)
class PublicFixture:
    """What `build public` runs for one part: `build(reference module)`, and the part it
    names (None: the module's part)."""

    build: Builder
    part: str | None = None


def public_fixture(build: Builder | None = None, *, part: str | None = None) -> Any:
    """Make `build` a fixture of the same name: its values, recorded from the reference by
    `build public` into public_fixtures/<part>.pt and read back in `check`.

    `part`: the part whose reference it runs (default: the module's part).
    """
    if build is None:
        return lambda function: public_fixture(function, part=part)
    named = part

    @pytest.fixture(name=build.__name__)
    def read(
        request: pytest.FixtureRequest, load_fixture: Callable[[str], dict[str, Any]]
    ) -> dict[str, Any]:
        return load_fixture(named or part_of_module(request.module, Path(str(request.path))))

    read.__doc__ = build.__doc__
    setattr(read, RECORDER_ATTRIBUTE, PublicFixture(build, part))
    return read
