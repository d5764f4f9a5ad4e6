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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Where a fixture function keeps what `build public` runs (see grader/authoring/fixtures.py).
RECORDER_ATTRIBUTE = "grader_public_fixture"

Builder = Callable[[ModuleType], dict[str, Any]]


@dataclass(frozen=True)
class PublicFixture:
    """What `build public` runs for one test file: `build(reference module)`."""

    build: Builder


def public_fixture(build: Builder) -> Any:
    """Make `build` this test file's fixture of the same name: its values, recorded from the
    reference by `build public` into public_fixtures/<part>.pt and read back in `check`."""

    @pytest.fixture(name=build.__name__)
    def read(
        request: pytest.FixtureRequest, load_fixture: Callable[[str], dict[str, Any]]
    ) -> dict[str, Any]:
        return load_fixture(Path(str(request.path)).stem.removeprefix("test_"))

    read.__doc__ = build.__doc__
    setattr(read, RECORDER_ATTRIBUTE, PublicFixture(build))
    return read
