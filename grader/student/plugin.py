"""The pytest plugin every assignment's public tests get: where the files are, how they load.

`check` loads it (through `grader.student.report`), so public tests need no conftest.py of
their own. A test's part is its `@pytest.mark.part("id")` (on the test, its class or the
module's `pytestmark`), else its file's name `public_tests/test_<part>.py`
(grader/course/part_marker.py). Fixtures:

- `student_dir`: the folder holding the files under test: GRADER_STUDENT_DIR, else the
  assignment folder (the one with assignment.toml above the test file);
- `load_part(part_id)`: imports that part's file from `student_dir`, once a session;
- `part`: the module of the test's part;
- `load_fixture(name)`: reads `public_fixtures/<name>.pt` (tensors only, a fresh copy);
- `expected`: `load_fixture(<the test's part>)` (a `@public_fixture` of that name,
  grader/student/fixtures.py, reads the same file, which `build public` records);
- `device`: runs the test on the CPU and, where there is one, on the GPU.

And the marker `@pytest.mark.points(n)`: the test's weight in its part's public score.
`check` gates that score as grading gates hidden tests: a test that reads the fixtures
(`expected`, `load_fixture`) compares with the reference's values; the part's other tests
count once those have passed (grader/student/check.py).
To run public tests with plain pytest, load it by name from the course folder:
`python -m pytest -p grader.student.plugin assignments/<id>/public_tests`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from grader.course.manifest import parse_manifest
from grader.course.part_marker import PART_MARKER_HELP, part_of_item
from grader.errors import ConfigError
from grader.sandbox.numerics import GRADING_THREADS, use_grading_numerics
from grader.sandbox.settings import CUBLAS_WORKSPACE

MANIFEST = "assignment.toml"
FIXTURES_FOLDER = "public_fixtures"

PartLoader = Callable[[str], ModuleType]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "points(n): how much this test weighs inside its part")
    config.addinivalue_line("markers", PART_MARKER_HELP)
    # Grading's numerics, so that code passing here computes what it computes when graded
    # (deterministic algorithms, for one, fill memory from torch.empty with NaN). cuBLAS
    # reads its workspace setting when CUDA starts, after this.
    os.environ.setdefault(*CUBLAS_WORKSPACE)
    use_grading_numerics(torch, GRADING_THREADS)


def assignment_folder(test_file: Path) -> Path:
    """The folder holding assignment.toml above `test_file` (else the test folder's parent)."""
    for folder in test_file.resolve().parents:
        if (folder / MANIFEST).is_file():
            return folder
    return test_file.resolve().parent.parent


def part_file(folder: Path, part_id: str) -> str:
    """The file of `part_id` in the manifest, or `<part_id>.py` where the manifest has none."""
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            return parse_manifest(manifest).part(part_id).file
        except ConfigError:
            pass
    return f"{part_id}.py"


@pytest.fixture(scope="module")
def assignment_dir(request: pytest.FixtureRequest) -> Path:
    """The assignment folder of the running test file."""
    return assignment_folder(Path(str(request.path)))


@pytest.fixture(scope="module")
def student_dir(assignment_dir: Path) -> Path:
    """The folder holding the files under test."""
    folder = Path(os.environ.get("GRADER_STUDENT_DIR") or assignment_dir).resolve()
    if not folder.is_dir():
        pytest.fail(f"GRADER_STUDENT_DIR={folder} is not a folder.", pytrace=False)
    return folder


@dataclass
class _Loaded:
    """What this session imported: part modules by file, and the folders put on sys.path."""

    modules: dict[Path, ModuleType] = field(default_factory=dict)
    folders: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def _loaded_parts() -> Iterator[_Loaded]:
    """Every part file imported this session, so each is imported once, removed at the end."""
    loaded = _Loaded()
    yield loaded
    for module in loaded.modules.values():
        if sys.modules.get(module.__name__) is module:
            del sys.modules[module.__name__]
    for folder in loaded.folders:
        sys.path.remove(folder)


@pytest.fixture(scope="module")
def load_part(student_dir: Path, assignment_dir: Path, _loaded_parts: _Loaded) -> PartLoader:
    """Return a function that imports a part's file from the student folder, once a session."""

    def load(part_id: str) -> ModuleType:
        path = student_dir / part_file(assignment_dir, part_id)
        if path in _loaded_parts.modules:
            return _loaded_parts.modules[path]
        if not path.is_file():
            pytest.fail(f"{path} not found: every part needs its own file.", pytrace=False)
        # On the path so that one of your files may import another.
        if str(student_dir) not in sys.path:
            sys.path.insert(0, str(student_dir))
            _loaded_parts.folders.append(str(student_dir))
        # Load by file location, so a same-named module elsewhere on the path (or one
        # imported earlier) can never be tested by mistake.
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[path.stem]
            raise
        _loaded_parts.modules[path] = module
        return module

    return load


@pytest.fixture
def part(request: pytest.FixtureRequest, load_part: PartLoader) -> ModuleType:
    """The student's module of the test's part."""
    return load_part(part_of_item(request.node))


@pytest.fixture(scope="module")
def load_fixture(assignment_dir: Path) -> Callable[[str], dict[str, Any]]:
    """Return a function that reads `public_fixtures/<name>.pt` (a fresh copy each call)."""

    def load(name: str) -> dict[str, Any]:
        fixture: dict[str, Any] = torch.load(
            assignment_dir / FIXTURES_FOLDER / f"{name}.pt", weights_only=True
        )
        return fixture

    return load


@pytest.fixture
def expected(
    request: pytest.FixtureRequest, load_fixture: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """The public fixture of the test's part: public_fixtures/<part>.pt."""
    return load_fixture(part_of_item(request.node))


@pytest.fixture(
    params=[
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available"),
        ),
    ]
)
def device(request: pytest.FixtureRequest) -> torch.device:
    """Each test that takes `device` runs on the CPU and, where there is one, on the GPU."""
    return torch.device(request.param)
