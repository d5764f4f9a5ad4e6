"""`python -m grader new NAME`: a new assignment that passes `validate` as created.

It writes one example part, `scale` (multiply a tensor by a factor), with everything an
assignment needs, so course staff replace it rather than start from nothing:

    assignments/NAME/assignment.toml        the manifest
    assignments/NAME/scale.py               the stub students complete
    assignments/NAME/public_tests/test_scale.py
    assignments/NAME/public_fixtures/scale.pt   made by make_public_fixtures.py
    assignments/NAME/walkthrough.ipynb      one marked cell per part
    solutions/NAME/scale.py                 the reference
    solutions/NAME/make_public_fixtures.py
    solutions/NAME/hidden_tests/probes.py, test_scale.py

docs/authoring.md explains every file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grader.errors import ConfigError, UsageError

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,63}")

MANIFEST = """\
# The manifest the grader reads (docs/authoring.md lists every key).
[assignment]
id = "{name}"
title = "{title}"
# The notebook students may submit instead of (or next to) the .py files.
notebook = "walkthrough.ipynb"
# Reference code and hidden tests, relative to the course root (never shipped to students).
solutions = "solutions/{name}"

[limits]
# Per test, enforced from the trusted side.
timeout_s = 60
memory_mb = 3072

[visibility]
hidden = "after_published"
public = "visible"

[[parts]]
id = "scale"
file = "scale.py"
points = 10
"""

STUB = '''\
"""Part `scale`: multiply a tensor by a number."""

from __future__ import annotations

import torch


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Return `x * factor`: a new tensor of x's shape, dtype and device (x is unchanged)."""
    raise NotImplementedError("scale: multiply x by factor")
'''

REFERENCE = '''\
"""Reference solution of part `scale`."""

from __future__ import annotations

import torch


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Return `x * factor`: a new tensor of x's shape, dtype and device (x is unchanged)."""
    result = x * factor
    return result
'''

FIXTURE_SCRIPT = '''\
"""Regenerate the expected outputs the public tests compare against.

Usage: python solutions/{name}/make_public_fixtures.py [--out DIR]

Writes `<part_id>.pt` (tensors and numbers, loadable with weights_only=True) into DIR, by
default assignments/{name}/public_fixtures. Public seeds are below 10000; hidden tests
draw theirs at grading time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

SOLUTIONS_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = SOLUTIONS_DIR.parents[1] / "assignments" / "{name}" / "public_fixtures"
if str(SOLUTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(SOLUTIONS_DIR))

import scale  # noqa: E402


def scale_fixture() -> dict[str, object]:
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1000), dtype=torch.float64)
    return {{"x": x, "factor": 2.5, "y": scale.scale(x, 2.5)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.save(scale_fixture(), out / "scale.pt")


if __name__ == "__main__":
    main()
'''

PUBLIC_TEST = '''\
"""Public tests of part `scale`."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

from grader.testing import assert_tensor_close


@pytest.mark.points(1)
def test_scale_keeps_the_shape(part: ModuleType) -> None:
    """scale(x, f) has x's shape and dtype"""
    x = torch.zeros(2, 5)
    y = part.scale(x, 3.0)
    assert isinstance(y, torch.Tensor), f"scale returned {type(y).__name__}, expected a tensor."
    assert y.shape == x.shape, f"scale returned shape {tuple(y.shape)}, expected (2, 5)."
    assert y.dtype == x.dtype, f"scale returned {y.dtype}, expected {x.dtype}."


@pytest.mark.points(2)
def test_scale_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """scale(x, 2.5) matches the reference's output on the public fixture"""
    got = part.scale(expected["x"].clone(), expected["factor"])
    assert_tensor_close(got, expected["y"], what="scale(x, 2.5)")
'''

PROBES = '''\
"""Probes of {name}: shipped to the student side, so only torch and the standard library."""

from __future__ import annotations

import torch


def scale_probe(part, seed, device, dtype, shape, factor):
    """Inputs from `seed`, then the part's scale(); returns data only."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator, dtype=getattr(torch, dtype)).to(device)
    return {{"y": part.scale(x, factor), "x_after": x}}
'''

HIDDEN_TEST = '''\
"""Hidden tests of part `scale`: differential, on inputs drawn from the hidden seed."""

from __future__ import annotations

import probes
import pytest

from grader.testing import assert_tensor_close


@pytest.mark.points(3)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale_matches_reference(compare, seed, device, dtype):
    """scale(x, f) matches the reference on random x"""
    got, want = compare(
        probes.scale_probe, seed=seed, device=device, dtype=dtype, shape=[7, 3], factor=-1.5
    )
    assert_tensor_close(got["y"], want["y"], what="scale(x, -1.5)")


@pytest.mark.points(1)
def test_scale_leaves_x_unchanged(compare, seed, device):
    """scale(x, f) returns a new tensor and leaves x as it was"""
    got, want = compare(
        probes.scale_probe, seed=seed, device=device, dtype="float64", shape=[5], factor=2.0
    )
    assert_tensor_close(
        got["x_after"], want["x_after"], what="x after scale(x, 2.0)",
        hint="Return x * factor; do not multiply x in place (x *= factor).",
    )
'''


def _notebook(name: str, title: str) -> str:
    """The walkthrough: an introduction, the marked cell of the part, a cell that uses it."""

    def cell(kind: str, source: str, tags: list[str] | None = None) -> dict[str, object]:
        entry: dict[str, object] = {
            "cell_type": kind,
            "metadata": {"tags": tags} if tags else {},
            "source": source,
        }
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        return entry

    cells = [
        cell(
            "markdown",
            f"# {title}\n\nEach part has one cell marked `# part: <part_id>`. It imports your "
            "functions from the part's file; you may replace the import with your own code, "
            "and the grader then grades that cell instead of the file.",
        ),
        cell("code", "import torch"),
        cell("markdown", "## Part 1: `scale.py`"),
        cell(
            "code",
            "# part: scale\n# Write your code in scale.py, or replace the import below.\n"
            "from scale import scale",
            ["part:scale"],
        ),
        cell("code", "print(scale(torch.arange(3.0), 2.0))"),
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for index, entry in enumerate(cells):
        entry["id"] = f"{name[:20]}-{index}"
    return json.dumps(notebook, indent=1) + "\n"


def scaffold_files(name: str, title: str) -> dict[str, str]:
    """Each file of a new assignment, by its path under the course root."""
    assignment, solutions = f"assignments/{name}", f"solutions/{name}"
    return {
        f"{assignment}/assignment.toml": MANIFEST.format(name=name, title=title),
        f"{assignment}/scale.py": STUB,
        f"{assignment}/public_tests/test_scale.py": PUBLIC_TEST,
        f"{assignment}/walkthrough.ipynb": _notebook(name, title),
        f"{solutions}/scale.py": REFERENCE,
        f"{solutions}/make_public_fixtures.py": FIXTURE_SCRIPT.format(name=name),
        f"{solutions}/hidden_tests/probes.py": PROBES.format(name=name),
        f"{solutions}/hidden_tests/test_scale.py": HIDDEN_TEST,
    }


def scaffold_assignment(root: Path, name: str, *, title: str | None = None) -> list[Path]:
    """Write a new assignment `name` under the course `root`; return the files created."""
    from grader.validate import regenerate_fixtures

    if not NAME_PATTERN.fullmatch(name):
        raise UsageError(
            f"assignment name {name!r}: use lower case letters, digits and _, starting with a "
            "letter (it becomes a folder and a Python-friendly id)."
        )
    files = scaffold_files(name, (title or name).replace('"', "'"))
    taken = [
        path for path in (root / "assignments" / name, root / "solutions" / name) if path.exists()
    ]
    if taken:
        raise ConfigError(f"{taken[0]} already exists; choose another name or remove it first.")
    created: list[Path] = []
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        created.append(path)
    fixtures = root / "assignments" / name / "public_fixtures"
    regenerate_fixtures(root / "solutions" / name / "make_public_fixtures.py", fixtures)
    created.extend(sorted(fixtures.iterdir()))
    return created
