"""An assignment's `[environment]`: declared, checked by validate, locked, built and graded."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.authoring.build import build_autograder, build_starter
from grader.authoring.validate import environment_problems, validate_assignment
from grader.course.environment import Environment, parse_environment
from grader.course.lock import kept_entries, lock_problem, parse_entries, read_lock
from grader.course.manifest import load_assignment
from grader.course.root import PACKAGE_ROOT
from grader.errors import ConfigError
from grader.grading.grade import GradeSettings, grade_submission
from tests.support import COURSE_ROOT

MANIFEST = """\
[assignment]
id = "tb_logging"
solutions = "solutions/tb_logging"
{environment}
[[parts]]
id = "log_losses"
file = "log_losses.py"
points = 4
"""
STUB = '''\
"""Part `log_losses`."""

import torch


def train_and_log(x, y, *, steps, lr, log_dir):
    """Fit y ~ x @ w from w = 0, log each step's loss as "loss" in log_dir, return the losses."""
    raise NotImplementedError("train_and_log")
'''
REFERENCE = '''\
"""Reference of part `log_losses`."""

import torch
from torch.utils.tensorboard import SummaryWriter


def train_and_log(x, y, *, steps, lr, log_dir):
    """Fit y ~ x @ w from w = 0, log each step's loss as "loss" in log_dir, return the losses."""
    w = torch.zeros(x.shape[1], y.shape[1], dtype=x.dtype, requires_grad=True)
    losses = []
    with SummaryWriter(log_dir=log_dir) as writer:
        for step in range(steps):
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                w -= lr * w.grad
                w.grad.zero_()
            writer.add_scalar("loss", loss.item(), step)
            losses.append(loss.detach())
    return torch.stack(losses)
'''
PROBES = '''\
"""Probes: the losses returned and the scalars read back from the event file."""

import tempfile

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def log_losses_probe(part, seed, steps):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 3, generator=generator, dtype=torch.float64)
    y = torch.randn(16, 2, generator=generator, dtype=torch.float64)
    with tempfile.TemporaryDirectory() as log_dir:
        returned = part.train_and_log(x, y, steps=steps, lr=0.1, log_dir=log_dir)
        events = EventAccumulator(log_dir)
        events.Reload()
        logged = [event.value for event in events.Scalars("loss")]
    return {"returned": returned, "logged": torch.tensor(logged, dtype=torch.float64)}
'''
HIDDEN_TEST = '''\
"""Hidden tests of part `log_losses`."""

import probes
import pytest

from grader.testing import assert_tensor_close


@pytest.mark.points(4)
def test_losses_logged(compare, seed):
    """train_and_log returns and logs each step's loss"""
    got, want = compare(probes.log_losses_probe, seed=seed, steps=4)
    assert_tensor_close(got["returned"], want["returned"], what="the returned losses")
    assert_tensor_close(got["logged"], want["logged"], what="the logged losses", rtol=1e-6)
'''
DECLARED = '\n[environment]\npackages = ["tensorboard>=2.14"]\n'


def write_course(root: Path, *, environment: str) -> Path:
    """A one-part course whose reference logs with tensorboard's SummaryWriter."""
    files = {
        "assignments/tb_logging/assignment.toml": MANIFEST.format(environment=environment),
        "assignments/tb_logging/log_losses.py": STUB,
        "solutions/tb_logging/log_losses.py": REFERENCE,
        "solutions/tb_logging/hidden_tests/probes.py": PROBES,
        "solutions/tb_logging/hidden_tests/test_log_losses.py": HIDDEN_TEST,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "constraints.txt").write_bytes((COURSE_ROOT / "constraints.txt").read_bytes())
    return root


# -- the declaration ---------------------------------------------------------------------------


def test_declaration_is_parsed_as_requirements(tmp_path: Path) -> None:
    manifest = tmp_path / "assignment.toml"
    parsed = parse_environment(
        {"packages": ["TensorBoard >= 2.14"], "kit_packages": ["matplotlib>=3.8"]}, manifest
    )
    assert parsed == Environment(packages=("TensorBoard>=2.14",), kit_packages=("matplotlib>=3.8",))
    assert parsed.names == frozenset({"tensorboard"})
    assert parse_environment(None, manifest) == Environment()


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"packages": "tensorboard"}, "must be a list of requirements"),
        ({"packages": ["tensorboard>>2"]}, "'tensorboard>>2'"),
        ({"packages": ["tb @ https://example.org/tb.whl"]}, "not a URL"),
        ({"packages": ["tensorboard", "TensorBoard>=2"]}, "names TensorBoard twice"),
        ({"package": ["tensorboard"]}, "unknown keys ['package']"),
    ],
)
def test_bad_declaration_names_what_is_wrong(tmp_path: Path, table: object, said: str) -> None:
    with pytest.raises(ConfigError, match="environment") as raised:
        parse_environment(table, tmp_path / "assignment.toml")
    assert said in str(raised.value)


def test_validate_names_the_package_an_undeclared_import_needs(tmp_path: Path) -> None:
    course = write_course(tmp_path, environment="")
    problems = environment_problems(load_assignment("tb_logging", root=course / "assignments"))
    assert problems == [
        "solutions/tb_logging/log_losses.py line 4: imports torch.utils.tensorboard, which "
        "needs package 'tensorboard': the grading environment lacks it; declare it in "
        "assignments/tb_logging/assignment.toml [environment] packages (e.g. packages = "
        '["tensorboard"])',
        "solutions/tb_logging/hidden_tests/probes.py line 6: imports tensorboard, which needs "
        "package 'tensorboard': the grading environment lacks it; declare it in "
        "assignments/tb_logging/assignment.toml [environment] packages (e.g. packages = "
        '["tensorboard"])',
    ]


def test_a_declared_package_needs_its_lock(tmp_path: Path) -> None:
    course = write_course(tmp_path, environment=DECLARED)
    assignment = load_assignment("tb_logging", root=course / "assignments")
    assert environment_problems(assignment) == [
        "assignments/tb_logging/environment.lock is missing: [environment] declares packages; "
        "python -m grader build autograder -a tb_logging writes it, then commit it"
    ]


def test_bundled_assignments_declare_what_they_import() -> None:
    for name in ("pytorch_basics", "pytorch_graphs", "pytorch_losses"):
        assert environment_problems(load_assignment(name)) == [], name


# -- the lock ------------------------------------------------------------------------------------

UV_OUTPUT = """\
grpcio==1.85.3 \\
    --hash=sha256:aa \\
    --hash=sha256:bb
    # via tensorboard
numpy==2.4.6 ; python_full_version >= '3.11' \\
    --hash=sha256:cc
    # via
    #   tensorboard
    #   torchvision
nvidia-cublas==13.1.1.3 ; sys_platform == 'linux' \\
    --hash=sha256:dd
    # via torch
tensorboard==2.21.0 \\
    --hash=sha256:ee
    # via -r environment.in
torch==2.13.0 \\
    --hash=sha256:ff
    # via torchvision
torchvision==0.28.0 \\
    --hash=sha256:gg
    # via -r environment.in
"""


def test_lock_keeps_what_the_grader_does_not_install() -> None:
    entries = parse_entries(UV_OUTPUT)
    assert [(package.name, via) for package, via in entries] == [
        ("grpcio", ["tensorboard"]),
        ("numpy", ["tensorboard", "torchvision"]),
        ("nvidia-cublas", ["torch"]),
        ("tensorboard", ["-r environment.in"]),
        ("torch", ["torchvision"]),
        ("torchvision", ["-r environment.in"]),
    ]
    kept = kept_entries(
        entries, frozenset({"tensorboard", "torchvision"}), frozenset({"torch", "numpy"})
    )
    # torch's CUDA libraries come only through torch, which the grader installs (CPU build).
    assert [package.name for package in kept] == ["grpcio", "tensorboard", "torchvision"]
    assert kept[0].text.splitlines()[1:3] == ["    --hash=sha256:aa \\", "    --hash=sha256:bb"]
    assert entries[1][0].pin == "numpy==2.4.6 ; python_full_version >= '3.11'"


# -- built, installed and graded -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tensorboard_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course, declared and locked (the lock is resolved with uv from the package index)."""
    if importlib.util.find_spec("tensorboard") is None:
        pytest.skip("tensorboard is not installed here (pip install tensorboard)")
    course = write_course(tmp_path_factory.mktemp("course"), environment=DECLARED)
    try:
        build_autograder("tb_logging", output=course / "autograder.zip", course_root=course)
    except ConfigError as error:
        pytest.skip(f"cannot lock tensorboard here (no package index?): {error}")
    return course


@pytest.mark.slow
def test_declared_package_is_locked_built_and_graded(tensorboard_course: Path) -> None:
    course = tensorboard_course
    assignment = load_assignment("tb_logging", root=course / "assignments")
    assert lock_problem(assignment, course) is None
    lock = read_lock(course / "assignments/tb_logging/environment.lock")
    assert lock.declared == ("tensorboard>=2.14",)
    locked = {package.name for package in lock.packages}
    assert {"tensorboard", "grpcio", "protobuf"} <= locked
    assert not locked & {"torch", "numpy", "packaging"}  # the grader installs those
    assert all("--hash=sha256:" in package.text for package in lock.packages)
    # The lock ships in every kit: it names no folder of the machine that made it.
    lock_text = (course / "assignments/tb_logging/environment.lock").read_text()
    assert "-c constraints.txt" in lock_text and str(PACKAGE_ROOT) not in lock_text
    with zipfile.ZipFile(course / "autograder.zip") as archive:
        assert "assignments/tb_logging/environment.lock" in archive.namelist()

    result = grade_submission(
        course / "solutions" / "tb_logging", assignment, GradeSettings(seed=7, device="cpu")
    )
    assert (result.score, result.max_score, result.grader_error) == (4.0, 4.0, "")
    versions = result.environment["packages"]
    assert versions["tensorboard"] == next(
        package.version for package in lock.packages if package.name == "tensorboard"
    )

    kit = build_starter("tb_logging", output=course / "kit.zip", course_root=course)
    # The kit installs what grading used: the declared package in its pyproject.toml, pinned
    # at the graded version by its constraints.txt.
    with zipfile.ZipFile(kit.path) as archive:
        pyproject = archive.read("tb_logging/pyproject.toml").decode()
        constraints = archive.read("tb_logging/constraints.txt").decode()
    assert "tensorboard" in pyproject
    assert f"tensorboard=={versions['tensorboard']}" in constraints


@pytest.mark.slow
def test_setup_script_installs_the_lock(tensorboard_course: Path, tmp_path: Path) -> None:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tensorboard_course / "autograder.zip") as archive:
        archive.extractall(root / "source")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GRADER_SETUP_ROOT": str(root),
        "GRADER_SETUP_PYTHON": sys.executable,
        "GRADER_SETUP_SKIP_APT": "1",
        "GRADER_SETUP_SKIP_PIP": "1",
    }
    process = subprocess.run(
        ["bash", root / "source" / "setup.sh"], env=env, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr
    lock = root / "source/assignments/tb_logging/environment.lock"
    assert process.stdout.splitlines()[-2].endswith(f"--no-deps --require-hashes -r {lock}"), (
        process.stdout
    )


@pytest.mark.slow
def test_validate_fails_once_the_declaration_is_removed(
    tensorboard_course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = tensorboard_course / "assignments/tb_logging/assignment.toml"
    manifest.write_text(MANIFEST.format(environment=""), encoding="utf-8")
    monkeypatch.setenv("GRADER_COURSE", str(tensorboard_course))
    problems = validate_assignment("tb_logging", say=lambda line: None)
    assert any("needs package 'tensorboard'" in problem for problem in problems), problems
    assert any("declares no packages; delete the lock" in problem for problem in problems)
