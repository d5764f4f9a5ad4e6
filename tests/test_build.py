"""`build autograder`, `build starter`, and the Docker side: setup.sh and run_autograder."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from grader.authoring.build import build_autograder, build_starter, kit_manifest
from grader.errors import ConfigError
from tests.support import ASSIGNMENT_DIR, COURSE_ROOT, SOLUTIONS_DIR

DOCKER_DIR = COURSE_ROOT / "docker"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def is_junk(name: str) -> bool:
    parts = name.split("/")
    return (
        "__pycache__" in parts
        or any(part.startswith(".") for part in parts)
        or name.endswith((".pyc", ".pyo"))
        or any(part.endswith(".egg-info") for part in parts)
    )


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_autograder(
        "pytorch_basics", output=tmp_path_factory.mktemp("ag") / "autograder.zip"
    ).path


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_starter(
        "pytorch_basics", output=tmp_path_factory.mktemp("kit") / "starter.zip"
    ).path


def archive_text(path: Path, name: str) -> str:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name).decode("utf-8")


# -- the autograder zip ----------------------------------------------------------------------


def test_autograder_zip_has_gradescope_layout(autograder: Path) -> None:
    with zipfile.ZipFile(autograder) as archive:
        infos = {info.filename: info for info in archive.infolist()}
    for name in ("setup.sh", "run_autograder"):
        assert stat.S_IMODE(infos[name].external_attr >> 16) == 0o755
    expected = {
        "pyproject.toml",
        "constraints.txt",
        "grader/__main__.py",
        "grader/sandbox/server.py",
        "assignments/pytorch_basics/assignment.toml",
        "assignments/pytorch_basics/manual_backprop.py",
        "solutions/pytorch_basics/manual_backprop.py",
    }
    assert expected <= infos.keys()
    assert any(name.startswith("solutions/pytorch_basics/hidden_tests/test_") for name in infos)
    assert not [name for name in infos if is_junk(name)]
    assert {info.date_time for info in infos.values()} == {ZIP_EPOCH}
    assert list(infos) == sorted(infos)


def test_autograder_zip_is_reproducible(autograder: Path, tmp_path: Path) -> None:
    again = build_autograder("pytorch_basics", output=tmp_path / "again.zip").path
    assert again.read_bytes() == autograder.read_bytes()


def test_autograder_zip_ships_the_scripts_unchanged(autograder: Path) -> None:
    with zipfile.ZipFile(autograder) as archive:
        for name in ("setup.sh", "run_autograder"):
            assert archive.read(name) == (DOCKER_DIR / name).read_bytes()


# -- the starter kit ---------------------------------------------------------------------------


def function_bodies(source: str) -> set[str]:
    """ast dumps of every non-trivial function body in `source` (docstrings left out)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    dumps = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            if body:
                dumps.add(ast.dump(ast.Module(body=body, type_ignores=[])))
    return dumps


def kit_python(archive: zipfile.ZipFile) -> dict[str, str]:
    """Every piece of Python in the kit: .py files and notebook code cells."""
    code: dict[str, str] = {}
    for name in archive.namelist():
        if name.endswith(".py"):
            code[name] = archive.read(name).decode("utf-8")
        elif name.endswith(".ipynb"):
            cells = json.loads(archive.read(name))["cells"]
            for index, cell in enumerate(cells):
                if cell["cell_type"] == "code":
                    source = cell["source"]
                    code[f"{name}#{index}"] = (
                        "".join(source) if isinstance(source, list) else source
                    )
    return code


def test_starter_kit_holds_the_public_files_in_one_folder(starter: Path) -> None:
    with zipfile.ZipFile(starter) as archive:
        names = archive.namelist()
    assert all(name.startswith("pytorch_basics/") for name in names)
    inside = {name.removeprefix("pytorch_basics/") for name in names}
    for part in ("manual_backprop.py", "assignment.toml", "walkthrough.ipynb"):
        assert f"assignments/pytorch_basics/{part}" in inside
    assert {"grader/__main__.py", "grader/cli.py", "pyproject.toml", "constraints.txt"} <= inside
    assert ("README.md" in inside) == (ASSIGNMENT_DIR / "README.md").is_file()
    assert not [name for name in inside if is_junk(name)]


def test_the_kit_installs_from_its_own_pyproject_and_constraints(starter: Path) -> None:
    with zipfile.ZipFile(starter) as archive:
        names = archive.namelist()
        pyproject = tomllib.loads(archive.read("pytorch_basics/pyproject.toml").decode())
        constraints = archive.read("pytorch_basics/constraints.txt").decode()
    assert not [name for name in names if name.endswith("requirements.txt")]
    project = pyproject["project"]
    # The grader's own needs, the notebook's kernel and [environment] kit_packages (the
    # walkthrough's plots); JupyterLab only as the extra `lab`.
    assert {"torch>=2.4", "pytest>=8", "rich>=13", "ipykernel>=6", "matplotlib>=3.8"} <= set(
        project["dependencies"]
    )
    assert project["optional-dependencies"] == {"lab": ["jupyterlab>=4"]}
    assert project["scripts"] == {"torch-grader": "grader.cli:main"}
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["grader*"]
    assert "dev" not in project["optional-dependencies"]  # no staff tooling in a student kit
    assert 'python -m pip install -c constraints.txt -e ".[lab]"' in (
        archive_text(starter, "pytorch_basics/README.md")
    )
    assert constraints == (COURSE_ROOT / "constraints.txt").read_text(encoding="utf-8")


def test_a_kit_pins_the_assignment_s_locked_packages(tmp_path: Path) -> None:
    built = build_starter("pytorch_training", output=tmp_path / "kit.zip")
    with zipfile.ZipFile(built.path) as archive:
        pyproject = tomllib.loads(archive.read("pytorch_training/pyproject.toml").decode())
        constraints = archive.read("pytorch_training/constraints.txt").decode()
    # The declared range goes in the dependencies (Colab installs without the constraints and
    # keeps what it has); the lock's exact versions go in the constraints.
    assert "tensorboard>=2.14" in pyproject["project"]["dependencies"]
    own = constraints.split("# pytorch_training's [environment] packages, as locked in ")[1]
    assert "tensorboard==2.21.0" in own.splitlines()
    assert constraints.startswith((COURSE_ROOT / "constraints.txt").read_text(encoding="utf-8"))


def test_starter_kit_leaks_nothing_from_solutions(starter: Path) -> None:
    private = [p for p in SOLUTIONS_DIR.parent.rglob("*") if p.is_file() and not is_junk(str(p))]
    private_digests = {
        hashlib.sha256(p.read_bytes()).hexdigest() for p in private if p.stat().st_size
    }
    reference_bodies: set[str] = set()
    for path in private:
        if path.suffix == ".py":
            reference_bodies |= function_bodies(path.read_text(encoding="utf-8"))
    assert len(reference_bodies) > 20, "the reference must have bodies to compare against"
    with zipfile.ZipFile(starter) as archive:
        names = archive.namelist()
        assert not [name for name in names if "solutions" in name.split("/")]
        for name in names:
            digest = hashlib.sha256(archive.read(name)).hexdigest()
            assert digest not in private_digests, f"{name} is a copy of a private file"
        for where, source in kit_python(archive).items():
            leaked = function_bodies(source) & reference_bodies
            assert not leaked, f"{where} holds a reference function body"


def test_stubs_really_differ_from_the_reference() -> None:
    """The leak check above means something only if the stubs are not the reference."""
    for stub in ASSIGNMENT_DIR.glob("*.py"):
        reference = SOLUTIONS_DIR / stub.name
        if reference.is_file():
            assert function_bodies(stub.read_text()) != function_bodies(reference.read_text())


@pytest.fixture
def tiny_course(tmp_path: Path) -> Path:
    """A course with one assignment `demo` whose reference has a real function body."""
    root = tmp_path / "course"
    (root / "grader").mkdir(parents=True)
    (root / "grader" / "__init__.py").write_text("")
    (root / "assignments" / "demo").mkdir(parents=True)
    (root / "assignments" / "demo" / "assignment.toml").write_text(
        '[assignment]\nid = "demo"\n\n[[parts]]\nid = "double"\nfile = "double.py"\npoints = 1\n'
    )
    (root / "assignments" / "demo" / "double.py").write_text(
        'def double(x):\n    """Return 2 * x."""\n    raise NotImplementedError\n'
    )
    (root / "solutions" / "demo").mkdir(parents=True)
    (root / "solutions" / "demo" / "double.py").write_text(
        'def double(x):\n    """Return 2 * x."""\n    y = x + x\n    return y\n'
    )
    return root


def test_stub_only_course_builds(tiny_course: Path, tmp_path: Path) -> None:
    built = build_starter(None, output=tmp_path / "kit.zip", course_root=tiny_course)
    assert "demo/assignments/demo/double.py" in built.files


@pytest.mark.parametrize(
    ("name", "content", "complaint"),
    [
        (
            "helper.py",
            "def twice(x):\n    y = x + x\n    return y\n",
            "has the body of demo/double.py:double",
        ),
        ("copy.txt", None, "is a copy of demo/double.py"),
        (
            "notes.ipynb",
            json.dumps(
                {
                    "cells": [
                        {
                            "cell_type": "code",
                            "source": ["def f(x):\n", "    y = x + x\n", "    return y"],
                        }
                    ]
                }
            ),
            "has the body of demo/double.py:double",
        ),
    ],
)
def test_starter_build_refuses_to_leak(
    tiny_course: Path, tmp_path: Path, name: str, content: str | None, complaint: str
) -> None:
    target = tiny_course / "assignments" / "demo" / name
    if content is None:
        shutil.copy(tiny_course / "solutions" / "demo" / "double.py", target)
    else:
        target.write_text(content)
    with pytest.raises(ConfigError, match=complaint):
        build_starter(None, output=tmp_path / "kit.zip", course_root=tiny_course)
    assert not (tmp_path / "kit.zip").exists()


# -- setup.sh and run_autograder ---------------------------------------------------------------


def test_scripts_parse_and_run_autograder_only_hands_over() -> None:
    subprocess.run(
        ["bash", "-n", DOCKER_DIR / "setup.sh", DOCKER_DIR / "run_autograder"], check=True
    )
    commands = [
        line
        for line in (DOCKER_DIR / "run_autograder").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert commands == [
        'exec /autograder/venv/bin/python -I -m grader gradescope --root /autograder "$@"'
    ]
    for name in ("setup.sh", "run_autograder"):
        assert os.access(DOCKER_DIR / name, os.X_OK)


@pytest.mark.slow
def test_setup_script_in_a_throwaway_root(autograder: Path, tmp_path: Path) -> None:
    """Runs setup.sh for real except for pip (printed) and apt-get (a stub on PATH)."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(root / "source")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    apt_log = tmp_path / "apt.log"
    (stubs / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {apt_log}\n')
    (stubs / "apt-get").chmod(0o755)
    env = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GRADER_SETUP_ROOT": str(root),
        "GRADER_SETUP_PYTHON": sys.executable,
        "GRADER_SETUP_SKIP_PIP": "1",
        "GRADER_SETUP_PIP_ARGS": "--no-index --find-links /wheels",
    }
    process = subprocess.run(
        ["bash", DOCKER_DIR / "setup.sh"], env=env, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr
    assert apt_log.read_text().splitlines() == [
        "update",
        "install -y --no-install-recommends python3 python3-venv",
    ]
    venv_python = root / "venv" / "bin" / "python"
    subprocess.run(
        [venv_python, "-c", "import sys; assert sys.prefix != sys.base_prefix"], check=True
    )
    source = root / "source"
    pip = f"{venv_python} -m pip install --no-input --no-cache-dir --disable-pip-version-check"
    pinned = f"-c {source}/constraints.txt --no-index --find-links /wheels"
    assert [
        line.removeprefix("setup.sh: would run: ")
        for line in process.stdout.splitlines()
        if "would run" in line
    ] == [
        f"{pip} {pinned} --index-url https://download.pytorch.org/whl/cpu torch",
        f"{pip} {pinned} -e {source}",
    ]
    for path in [source / "solutions", *(source / "solutions").rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert (source / "grader" / "sandbox" / "server.py").stat().st_mode & 0o004
    assert (source / "assignments" / "pytorch_basics" / "assignment.toml").stat().st_mode & 0o004


def test_setup_script_refuses_an_empty_source(tmp_path: Path) -> None:
    process = subprocess.run(
        ["bash", DOCKER_DIR / "setup.sh"],
        env={"PATH": os.environ["PATH"], "GRADER_SETUP_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 1
    assert "unpack the autograder zip there first" in process.stderr
    assert not (tmp_path / "venv").exists()


def test_the_kit_s_manifest_leaves_out_the_staff_s_policies() -> None:
    """Extensions name students and their due dates: the kit carries no [policy] table."""
    manifest = (
        '[assignment]\nid = "x"\n\n[[parts]]\nid = "a"\nfile = "a.py"\npoints = 10\n\n'
        '[policy]\nkeep = "best"\n\n[policy.late]\npercent = 10\nper = "day"\n\n'
        '[policy.late.extensions]  # private\n"ada@example.edu" = 2026-03-04T23:59:00Z\n\n'
        '[[hints]]\nmatch = ["x"]\nparts = ["a"]\ntext = "y"\n'
    )
    kit = kit_manifest(manifest)
    assert "ada@example.edu" not in kit and "policy" not in kit
    assert sorted(tomllib.loads(kit)) == ["assignment", "hints", "parts"]
