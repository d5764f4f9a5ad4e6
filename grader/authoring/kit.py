"""What a starter kit installs from: its pyproject.toml and constraints.txt, written by the build.

One command, run in the kit's folder (in a virtual environment), installs the grader and
everything the assignment declares, at the versions the grader grades with:

    python -m pip install -c constraints.txt -e ".[lab]"

The kit's pyproject.toml declares the grader's own dependencies, the assignment's
`[environment]` packages and `kit_packages` (ranges, as declared), and a Jupyter kernel when
the assignment has a notebook; its extra `lab` adds JupyterLab. constraints.txt pins them: the
grader's constraints, then the assignment's lock. Without `-c` (Colab's set-up cell), pip keeps
what is installed where it satisfies the ranges, Colab's own torch among them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from grader.course.lock import LOCK_NAME, lock_path, read_lock
from grader.course.manifest import Assignment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (Gradescope's Ubuntu 22.04 image)
    import tomli as tomllib

# The extra that adds JupyterLab, and what it installs.
LAB_EXTRA = "lab"
LAB_PACKAGES = ("jupyterlab>=4",)
KIT_INSTALL = f'python -m pip install -c constraints.txt -e ".[{LAB_EXTRA}]"'
# The file a kit once listed its packages in; an assignment folder must not carry one.
KIT_REQUIREMENTS = "requirements.txt"


def kit_dependencies(assignment: Assignment, project: dict[str, Any]) -> list[str]:
    """The grader's dependencies (its pyproject's `project`), the assignment's packages, a
    kernel, the kit's own."""
    return [
        *project.get("dependencies", []),
        *assignment.environment.packages,
        *(["ipykernel>=6"] if assignment.notebook else []),
        *assignment.environment.kit_packages,
    ]


def kit_pyproject(assignment: Assignment, grader_pyproject: Path, *, readme: bool) -> str:
    """The kit's pyproject.toml: the grader's package, with everything the assignment needs."""
    data = tomllib.loads(grader_pyproject.read_text(encoding="utf-8"))
    project = data.get("project", {})
    build_system = data.get("build-system", {})
    lines = [
        f"# The starter kit of {assignment.id}, written by `python -m grader build starter` from",
        f"# the grader's pyproject.toml and assignments/{assignment.id}/assignment.toml. In this",
        "# folder, in a virtual environment, one command installs the grader and everything the",
        f"# assignment needs, pinned by constraints.txt ([{LAB_EXTRA}] adds JupyterLab):",
        f"#   {KIT_INSTALL}",
        "[build-system]",
        f"requires = {_toml(build_system.get('requires', ['setuptools>=68']))}",
        f"build-backend = {_toml(build_system.get('build-backend', 'setuptools.build_meta'))}",
        "",
        "[project]",
        f"name = {_toml(project.get('name', 'torch-grader'))}",
        f"version = {_toml(project.get('version', '0'))}",
        f"description = {_toml(f'The grader and what {assignment.id} needs: its starter kit.')}",
        *([f"readme = {_toml('README.md')}"] if readme else []),
        f"requires-python = {_toml(project.get('requires-python', '>=3.10'))}",
        "dependencies = [",
        *(f"    {_toml(item)}," for item in kit_dependencies(assignment, project)),
        "]",
        "",
        "[project.optional-dependencies]",
        f"{LAB_EXTRA} = {_toml(list(LAB_PACKAGES))}",
        "",
        "[project.scripts]",
        *(f"{name} = {_toml(target)}" for name, target in project.get("scripts", {}).items()),
        "",
        "[tool.setuptools.packages.find]",
        f"include = {_toml(['grader*'])}",
    ]
    return "\n".join(lines) + "\n"


def kit_constraints(assignment: Assignment, grader_constraints: Path) -> str:
    """The grader's constraints, then the pins of the assignment's own lock (without hashes)."""
    text = grader_constraints.read_text(encoding="utf-8")
    lock = lock_path(assignment)
    if not (assignment.environment.packages and lock.is_file()):
        return text
    pins = [package.pin for package in read_lock(lock).packages]
    heading = f"# {assignment.id}'s [environment] packages, as locked in {LOCK_NAME}."
    return text.rstrip("\n") + "\n" + "\n".join([heading, *pins]) + "\n"


def _toml(value: str | list[str]) -> str:
    """A TOML string or array of strings (JSON's escapes are TOML's for these)."""
    return json.dumps(value, ensure_ascii=False)
