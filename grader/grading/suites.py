"""What the public run (`check`) and the hidden run (`grade`) decide the same way.

A student reads the same test name and the same reason for a skipped test whichever
command they see it in, so both pytest plugins take them from here.
"""

from __future__ import annotations

import inspect

import pytest

# After this many timeouts in one part, its remaining tests are not run (each would time out).
TIMEOUTS_PER_PART = 2
TIMEOUTS_PER_PART_MESSAGE = (
    f"Not run: {TIMEOUTS_PER_PART} earlier tests of this part ran out of time. Fix the slow or "
    "endless code first."
)
PART_BUDGET_MESSAGE = (
    "Stopped: this part's tests have used the {budget:g} s they get together, so this test "
    "{what}. Correct code takes a few seconds for all of them: look for a sleep, far more "
    "work than asked, or slow code at the top level of your file (it runs again in every test)."
)


def display_name(item: pytest.Item) -> str:
    """The docstring's first line (what students read), plus the parameter id."""
    function = getattr(item, "function", None)
    doc = inspect.getdoc(function) if function else None
    title = doc.splitlines()[0].strip() if doc else item.name.split("[")[0]
    callspec = getattr(item, "callspec", None)
    return f"{title} [{callspec.id}]" if callspec else title
