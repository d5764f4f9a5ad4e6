"""`python -m grader new NAME`: a new assignment that passes `validate` as created.

It writes one example part, `scale` (multiply a tensor by a factor), with everything an
assignment needs, so course staff replace it rather than start from nothing:

    assignments/NAME/assignment.toml        the manifest
    assignments/NAME/scale.py               the stub students complete (from the reference)
    assignments/NAME/public_tests/test_scale.py   with its @public_fixture
    assignments/NAME/public_tests/conftest.py   loads the grader's plugin for plain pytest
    assignments/NAME/public_fixtures/scale.pt   recorded from the reference
    assignments/NAME/walkthrough.ipynb      rendered from the manifest's [walkthrough] table
    assignments/NAME/README.md              the kit's README: install, check, submit
    solutions/NAME/scale.py                 the reference, its solution between markers
    solutions/NAME/hidden_tests/probes.py, test_scale.py

The stub and the public fixture are written as `build public` writes them (from the
reference), the notebook as `build notebook` renders it. docs/authoring.md explains every file.
"""

from __future__ import annotations

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

[environment]
# Packages beyond the grader's own, as ranges: `packages` for grading and students (locked in
# environment.lock by `build`), `kit_packages` for students only (a notebook's plots).
packages = []
kit_packages = []

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

# The walkthrough notebook, written by `python -m grader build notebook` from this table and
# the stubs: a Colab set-up cell, `intro`, `setup`, then per part its `intro`, the cell that
# imports the stub's functions, its check and its demonstration `cells`; check() and submit()
# at the end (docs/authoring.md, section 9).
[walkthrough]
intro = '''
# {title}
'''
setup = '''
import torch
'''

[walkthrough.parts.scale]
intro = '''
## Part 1: `scale.py`
'''
cells = [
'''
print(scale(torch.arange(3.0), 2.0))
''',
]
"""

REFERENCE = '''\
"""Part `scale`: multiply a tensor by a number."""

from __future__ import annotations

import torch


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Return `x * factor`: a new tensor of x's shape, dtype and device (x is unchanged)."""
    # BEGIN SOLUTION: multiply x by factor
    result = x * factor
    return result
    # END SOLUTION
'''

PUBLIC_TEST = '''\
"""Public tests of part `scale`."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

from grader.student.fixtures import public_fixture
from grader.testing import assert_tensor_close


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """x from a public seed and the reference's scale(x, 2.5)."""
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1000), dtype=torch.float64)
    return {"x": x, "factor": 2.5, "y": reference.scale(x, 2.5)}


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


# A check of scale() that doing nothing also passes: it counts once scale's seeded test does.
@pytest.mark.counts_after("test_scale_matches_reference")
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


CONFTEST = '''\
"""Lets plain pytest run these tests: `cd assignments/{name} && pytest public_tests`.

`python -m grader check` loads the grader's public-test plugin itself; plain pytest needs it
named here. The plugin provides the fixtures (`part`, `load_part`, `expected`, `load_fixture`,
`device`, `student_dir`) and the `points` marker. To test the files of another folder:
`GRADER_STUDENT_DIR=path/to/files pytest public_tests`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parents[3]

# Started inside the assignment folder, pytest finds the grader only if it is installed:
# otherwise put the course folder that holds it on the import path, for the plugin below.
if importlib.util.find_spec("grader") is None and (COURSE_ROOT / "grader").is_dir():
    sys.path.insert(0, str(COURSE_ROOT))

pytest_plugins = ("grader.student.plugin",)
'''

KIT_README = """\
# {title}: starter kit

<!-- The README at the top of the students' kit: say what the assignment is about, and keep
the table of parts in step with assignment.toml. -->

```
grader/                          the grader (you run it; do not edit it)
assignments/{name}/
    scale.py                     the file you complete, one per part
    walkthrough.ipynb            a notebook that tries your code out
    public_tests/                the tests `check` runs
pyproject.toml, constraints.txt  what to install, at the versions the grader uses
```

| part | file | points |
|---|---|---|
| `scale` | `scale.py` | 10 |

Each function's docstring says what to compute, with which shapes and dtypes. Keep the
function names and signatures as they are.

## The workflow

Run every command in the kit's folder, the one that holds `grader/` and `assignments/`.

```bash
python -m venv .venv && source .venv/bin/activate    # Windows: .venv\\Scripts\\activate
python -m pip install -c constraints.txt -e ".[lab]"  # everything, once; [lab]: JupyterLab
python -m grader check              # public tests, a table per part (from any folder in the kit)
python -m grader submit             # writes {name}_submission.zip
```

The install puts the grader, torch and every package the assignment uses into the virtual
environment, at the versions the grader grades with; leave out `[lab]` if you open the
notebook in VS Code rather than JupyterLab (`jupyter lab` opens it). Open a new terminal?
Activate the environment again first: without it, `python -m grader` names the package it
cannot find.

Upload `{name}_submission.zip` to Gradescope as it is. You may also write a part's code in
its marked cell of `walkthrough.ipynb` (the cell whose first line is `# part: <part_id>`)
instead of the `.py` file; the grader then grades that cell. Plain pytest works too:
`cd assignments/{name} && pytest public_tests`.

Passing `check` is a good sign, not a guarantee: the hidden tests use secret random inputs,
other shapes and both float32 and float64.
"""


def scaffold_files(name: str, title: str) -> dict[str, str]:
    """Each file of a new assignment, by its path under the course root."""
    assignment, solutions = f"assignments/{name}", f"solutions/{name}"
    return {
        f"{assignment}/assignment.toml": MANIFEST.format(name=name, title=title),
        f"{assignment}/public_tests/test_scale.py": PUBLIC_TEST,
        f"{assignment}/public_tests/conftest.py": CONFTEST.format(name=name),
        f"{assignment}/README.md": KIT_README.format(name=name, title=title),
        f"{solutions}/scale.py": REFERENCE,
        f"{solutions}/hidden_tests/probes.py": PROBES.format(name=name),
        f"{solutions}/hidden_tests/test_scale.py": HIDDEN_TEST,
    }


def scaffold_assignment(root: Path, name: str, *, title: str | None = None) -> list[Path]:
    """Write a new assignment `name` under the course `root`; return the files created."""
    from grader.authoring.public import PUBLIC_STEPS
    from grader.course.manifest import parse_manifest
    from grader.notebook.walkthrough import write_walkthrough

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
    # The stub and the public fixture from the reference, as `build public` writes them; then
    # the notebook, rendered from the manifest and the stub as `build notebook` rewrites it.
    manifest = parse_manifest(root / "assignments" / name / "assignment.toml")
    for step in PUBLIC_STEPS:
        created.extend(step(manifest).wrote)
    created.append(write_walkthrough(manifest))
    return created
