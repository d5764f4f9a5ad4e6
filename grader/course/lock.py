"""`assignments/<id>/environment.lock`: the declared packages at exact versions, with hashes.

The lock is resolved with uv against the grader's own constraints.txt, for every platform and
Python the grader supports (one lock serves Gradescope's Python 3.10 image and a student's
laptop), and keeps only what the grader does not already install: the declared packages and
what they need beyond the grader's packages. setup.sh installs it with `--require-hashes`, so
every image of a course grades with the same files. Its header records the declaration and
the constraints it was made from; `build` makes it again when either changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from grader.course.environment import grader_distributions, installed_versions, normalize
from grader.course.manifest import Assignment
from grader.course.root import PACKAGE_ROOT
from grader.errors import ConfigError

LOCK_NAME = "environment.lock"
# The oldest Python the lock must serve: Gradescope's Ubuntu 22.04 image.
OLDEST_PYTHON = "3.10"
RESOLVE_TIMEOUT_S = 600
DECLARED = "# declared: "
CONSTRAINTS = "# constraints: sha256:"
INPUT_NAME = "environment.in"
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]*?))?\s*\\?$")


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str
    marker: str
    # The entry as uv wrote it: the pin, its hashes and where it comes from.
    text: str

    @property
    def pin(self) -> str:
        """`name==version ; marker`, as a requirements line without hashes."""
        return f"{self.name}=={self.version}" + (f" ; {self.marker}" if self.marker else "")


@dataclass(frozen=True)
class Lock:
    declared: tuple[str, ...]
    constraints_sha256: str
    packages: tuple[LockedPackage, ...]


def lock_path(assignment: Assignment) -> Path:
    return assignment.directory / LOCK_NAME


def constraints_file(course_root: Path) -> Path:
    """The constraints.txt an autograder built from `course_root` ships (grader.authoring.build)."""
    for folder in (course_root, PACKAGE_ROOT):
        if (folder / "constraints.txt").is_file():
            return folder / "constraints.txt"
    raise ConfigError(
        f"no constraints.txt in {course_root} or {PACKAGE_ROOT}: the grader's pins are missing."
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_entries(text: str) -> list[tuple[LockedPackage, list[str]]]:
    """uv's requirements output: each entry with the names it is required `# via`."""
    entries: list[tuple[LockedPackage, list[str]]] = []
    block: list[str] = []
    via: list[str] = []

    def close() -> None:
        if block:
            match = ENTRY.match(block[0])
            if match is None:
                raise ConfigError(f"unexpected line in a lock: {block[0]!r}")
            name, version, marker = match.group(1), match.group(2), match.group(3) or ""
            package = LockedPackage(name, version, marker.strip(), "\n".join(block))
            entries.append((package, list(via)))
        block.clear()
        via.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if ENTRY.match(line):
            close()
            block.append(line)
        elif block and stripped:
            block.append(line)
            comment = stripped.removeprefix("#").strip()
            if comment.startswith("via"):
                via.extend(part for part in [comment.removeprefix("via").strip()] if part)
            elif stripped.startswith("#") and comment:
                via.append(comment)
    close()
    return entries


def read_lock(path: Path) -> Lock:
    """A lock file as written by `write_lock`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the lock: {error}") from error
    lines = text.splitlines()
    declared = tuple(line.removeprefix(DECLARED) for line in lines if line.startswith(DECLARED))
    digests = [line.removeprefix(CONSTRAINTS) for line in lines if line.startswith(CONSTRAINTS)]
    return Lock(
        declared,
        digests[0] if digests else "",
        tuple(package for package, _ in parse_entries(text)),
    )


def lock_problem(assignment: Assignment, course_root: Path) -> str | None:
    """Why the assignment's lock does not match its declaration, or None when it does."""
    path = lock_path(assignment)
    where = f"assignments/{assignment.id}/{LOCK_NAME}"
    make = f"python -m grader build autograder -a {assignment.id} writes it"
    if not assignment.environment.packages:
        if path.exists():
            return f"{where}: [environment] declares no packages; delete the lock"
        return None
    if not path.is_file():
        return f"{where} is missing: [environment] declares packages; {make}, then commit it"
    lock = read_lock(path)
    if lock.declared != assignment.environment.packages:
        return (
            f"{where} locks {list(lock.declared)}, but [environment] declares "
            f"{list(assignment.environment.packages)}: {make} again"
        )
    if lock.constraints_sha256 != _digest(constraints_file(course_root)):
        return (
            f"{where} was resolved against other grader constraints (constraints.txt changed): "
            f"{make} again"
        )
    return None


def _uv() -> str:
    """The uv executable: the `uv` package's, else one on PATH."""
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found is None:
        raise ConfigError(
            "locking [environment] packages needs uv: pip install uv (or pip install -e "
            "'.[lock]' in the grader's folder)"
        )
    return found


def kept_entries(
    entries: list[tuple[LockedPackage, list[str]]], roots: frozenset[str], provided: frozenset[str]
) -> list[LockedPackage]:
    """The entries reachable from `roots` without passing through a package already provided.

    torch's own needs (its CUDA libraries, as PyPI's torch lists them) stay out when a
    declared package needs torch: the grader installs torch, its CPU build on Gradescope.
    """
    parents: dict[str, set[str]] = {}
    for package, via in entries:
        parents.setdefault(normalize(package.name), set()).update(normalize(name) for name in via)
    kept: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, required_by in parents.items():
            if name in kept or name in provided:
                continue
            if name in roots or required_by & kept:
                kept.add(name)
                changed = True
    return [package for package, _ in entries if normalize(package.name) in kept]


def resolve(assignment: Assignment, course_root: Path) -> str:
    """The lock text for the assignment's declaration, resolved with uv (uses the index)."""
    constraints = constraints_file(course_root)
    packages = assignment.environment.packages
    with tempfile.TemporaryDirectory(prefix="grader-lock-") as scratch:
        folder = Path(scratch)
        (folder / INPUT_NAME).write_text("\n".join(packages) + "\n", encoding="utf-8")
        output = folder / "resolved.txt"
        # Passed by a relative name: uv writes it into the lock's `# via -c ...` notes, and a
        # committed lock that ships in every kit must not name a folder of the author's machine.
        shutil.copyfile(constraints, folder / "constraints.txt")
        old = lock_path(assignment)
        if old.is_file():
            # uv keeps the versions of an existing output file where they still fit.
            shutil.copyfile(old, output)
        command = [
            _uv(), "pip", "compile", INPUT_NAME, "--constraint", "constraints.txt",
            "--universal", "--python-version", OLDEST_PYTHON, "--generate-hashes",
            "--no-header", "--quiet", "--output-file", str(output),
        ]  # fmt: skip
        environment = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        try:
            process = subprocess.run(
                command,
                cwd=folder,
                env=environment,
                capture_output=True,
                text=True,
                timeout=RESOLVE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise ConfigError(
                f"resolving [environment] packages {list(packages)} took over "
                f"{RESOLVE_TIMEOUT_S} s; is the package index reachable?"
            ) from error
        if process.returncode != 0:
            raise ConfigError(
                f"cannot lock [environment] packages {list(packages)} against the grader's "
                f"constraints ({constraints}):\n{process.stderr.strip()}"
            )
        entries = parse_entries(output.read_text(encoding="utf-8"))
    roots = frozenset(normalize(Requirement(text).name) for text in packages)
    kept = kept_entries(entries, roots, grader_distributions() - roots)
    header = [
        f"# assignments/{assignment.id}/{LOCK_NAME}: the packages assignment.toml [environment]",
        "# declares and what they need beyond the grader's own, at exact versions with the hash",
        "# of every file, resolved against the grader's constraints.txt. `python -m grader build`",
        "# writes it when the declaration or the constraints change; setup.sh installs it with",
        "# pip install --no-deps --require-hashes. Commit it.",
        *(f"{DECLARED}{text}" for text in packages),
        f"{CONSTRAINTS}{_digest(constraints)}",
    ]
    return "\n".join([*header, *(package.text for package in kept)]) + "\n"


def ensure_lock(assignment: Assignment, course_root: Path) -> Path | None:
    """Write the assignment's lock if it is missing or stale; the path when it was written."""
    if not assignment.environment.packages or lock_problem(assignment, course_root) is None:
        return None
    path = lock_path(assignment)
    text = resolve(assignment, course_root)
    path.write_text(text, encoding="utf-8")
    return path


def graded_package_versions(assignment: Assignment) -> dict[str, str | None]:
    """The `[environment]` packages and what their lock adds, at the versions installed here."""
    names = set(assignment.environment.names)
    path = lock_path(assignment)
    if names and path.is_file():
        names.update(package.name for package in read_lock(path).packages)
    return installed_versions(names)
