"""`build`: the Gradescope autograder zip and the students' starter kit, as reproducible zips.

The autograder zip is what Gradescope unpacks into /autograder/source: `setup.sh` and
`run_autograder` at its root, next to grader/, the assignment, its solutions and the
packaging files `setup.sh` installs from. The starter kit is the public part only, and its
build refuses to write a kit that carries anything of the private solutions folder: a file
from it, a byte-identical copy of one of its files, or the body of one of its functions.

Both carry the assignment's `environment.lock` (its `[environment]` packages, locked; written
here when missing or stale, see grader/course/lock.py), which setup.sh installs; the kit gets a
`pyproject.toml` and `constraints.txt` of its own (grader/authoring/kit.py), so that one pip
command installs the grader with everything the assignment declares, at those versions.

Entries are sorted and stamped with a fixed time and fixed permissions, so building twice
from the same tree gives the same bytes.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.kit import kit_constraints, kit_pyproject
from grader.authoring.stubs import has_markers, make_stub
from grader.course.lock import ensure_lock
from grader.course.manifest import Assignment, load_assignment
from grader.course.root import PACKAGE_ROOT, find_course_root
from grader.errors import ConfigError
from grader.intake.archive import JUNK_DIRS
from grader.results.atomic import ZipEntry, replacing, write_zip

JUNK_SUFFIXES = (".pyc", ".pyo", ".egg-info")
# What setup.sh installs the grader from (README.md is pyproject's `readme`, when present).
PACKAGING_FILES = ("pyproject.toml", "constraints.txt", "README.md")
# A TOML table or array-of-tables header, and the dotted name inside it.
TABLE_HEADER = re.compile(r"^\s*\[\[?([^\[\]]+)\]\]?\s*(?:#.*)?$")


@dataclass(frozen=True)
class Built:
    path: Path
    files: tuple[str, ...]
    size_bytes: int
    # What the build wrote besides the zip (an assignment's environment.lock), to commit.
    wrote: tuple[Path, ...] = ()


def _walk(folder: Path) -> Iterator[Path]:
    """Every file under `folder` worth shipping: no caches, dotfiles or editor leftovers."""
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in JUNK_DIRS and not d.startswith(".") and not d.endswith(JUNK_SUFFIXES)
        )
        for name in sorted(names):
            if name.startswith(".") or name.endswith(JUNK_SUFFIXES):
                continue
            path = Path(current) / name
            if path.is_symlink():
                raise ConfigError(
                    f"{path} is a link; builds never follow links. Replace it with the file."
                )
            yield path


def _tree(folder: Path, course_root: Path) -> list[ZipEntry]:
    if not folder.is_dir():
        raise ConfigError(f"{folder} is missing; the build needs it.")
    return [
        ZipEntry(path.relative_to(course_root).as_posix(), path, os.access(path, os.X_OK))
        for path in _walk(folder)
    ]


def _packaging(course_root: Path) -> list[ZipEntry]:
    """The packaging files, from the course root, else from where the grader was installed."""
    return [
        ZipEntry(name, folder / name)
        for name in PACKAGING_FILES
        for folder in [_first_with(name, course_root, PACKAGE_ROOT)]
        if (folder / name).is_file()
    ]


def _first_with(name: str, *folders: Path) -> Path:
    """The first of `folders` holding `name` (the last one when none does)."""
    return next((folder for folder in folders if (folder / name).exists()), folders[-1])


def _grader_tree() -> list[ZipEntry]:
    """The grader package, wherever it is installed, stored as grader/..."""
    return _tree(PACKAGE_ROOT / "grader", PACKAGE_ROOT)


def course_of(assignment: Assignment) -> Path:
    """The course root an assignment lives in (assignments/<id>/ under it)."""
    return assignment.directory.parent.parent


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _build_zip(path: Path, entries: Iterable[ZipEntry], *, prefix: str = "") -> Built:
    """Write a reproducible zip atomically, its entries sorted by name under `prefix`."""
    ordered = sorted(
        (ZipEntry(prefix + entry.name, entry.source, entry.executable) for entry in entries),
        key=lambda entry: entry.name,
    )
    names = tuple(entry.name for entry in ordered)
    if len(set(names)) != len(names):
        raise ConfigError(f"two files would be stored under the same name in {path}.")
    with replacing(path) as temporary:
        write_zip(temporary, ordered)
    return Built(path, names, path.stat().st_size)


def autograder_entries(assignment: Assignment, course_root: Path | None = None) -> list[ZipEntry]:
    """setup.sh and run_autograder at the root, then everything Gradescope must install."""
    course_root = course_root or course_of(assignment)
    if not _inside(assignment.solutions_dir, course_root):
        raise ConfigError(
            f"{assignment.id}: solutions folder {assignment.solutions_dir} is outside "
            f"{course_root}; keep it under the course root so the autograder can ship it."
        )
    docker = _first_with("docker", course_root, PACKAGE_ROOT) / "docker"
    return [
        ZipEntry("setup.sh", docker / "setup.sh", executable=True),
        ZipEntry("run_autograder", docker / "run_autograder", executable=True),
        *_packaging(course_root),
        *_grader_tree(),
        *_tree(assignment.directory, course_root),
        *_tree(assignment.solutions_dir, course_root),
    ]


def starter_entries(assignment: Assignment, course_root: Path | None = None) -> list[ZipEntry]:
    """The public part: grader/, the assignment folder, packaging, the student README on top."""
    course_root = course_root or course_of(assignment)
    entries = [
        *[entry for entry in _packaging(course_root) if entry.name != "README.md"],
        *_grader_tree(),
        *_tree(assignment.directory, course_root),
    ]
    readme = assignment.directory / "README.md"
    if readme.is_file():
        entries.append(ZipEntry("README.md", readme))
    return entries


def kit_manifest(text: str) -> str:
    """The manifest as the kit carries it: without the `[policy]` tables, which are staff's
    (students' e-mails and extended due dates among them; `check` needs none of it)."""
    kept: list[str] = []
    in_policy = False
    for line in text.splitlines(keepends=True):
        header = TABLE_HEADER.match(line)
        if header:
            in_policy = header.group(1).strip().strip('"') == "policy" or header.group(
                1
            ).strip().startswith("policy.")
        if not in_policy:
            kept.append(line)
    return "".join(kept)


# -- leak checks for the starter kit ---------------------------------------------------------


def _function_bodies(source: str) -> dict[str, str]:
    """ast dump of each function body (docstring left out) -> the function's name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    bodies: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if body and not _says_nothing(body):
            bodies[ast.dump(ast.Module(body=body, type_ignores=[]))] = node.name
    return bodies


def _says_nothing(body: list[ast.stmt]) -> bool:
    """`pass`, `...` or `raise NotImplementedError(...)`: a body that gives nothing away."""
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False


def _python_sources(entry: ZipEntry) -> Iterator[str]:
    """The Python code a kit file carries: a .py file, or a notebook's code cells."""
    if entry.name.endswith(".py"):
        yield entry.source.read_text(encoding="utf-8", errors="replace")
    elif entry.name.endswith(".ipynb"):
        try:
            cells = json.loads(entry.source.read_text(encoding="utf-8")).get("cells", [])
        except (ValueError, AttributeError):
            return
        for cell in cells:
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                yield "".join(source) if isinstance(source, list) else str(source)


def find_leaks(entries: Iterable[ZipEntry], private: Path) -> list[str]:
    """Everything in `entries` that comes from the private folder, each said in one line."""
    private_files = list(_walk(private)) if private.is_dir() else []
    digests = {
        hashlib.sha256(path.read_bytes()).hexdigest(): path
        for path in private_files
        if path.stat().st_size > 0
    }
    bodies: dict[str, str] = {}
    for path in private_files:
        if path.suffix == ".py":
            source = path.read_text(encoding="utf-8")
            # What a reference's markers leave in its stub is the students' by design.
            public = _function_bodies(make_stub(source)) if has_markers(source) else {}
            for body, name in _function_bodies(source).items():
                if body not in public:
                    bodies[body] = f"{path.relative_to(private)}:{name}"
    leaks: list[str] = []
    for entry in entries:
        if _inside(entry.source, private):
            leaks.append(f"{entry.name} is a file of the private {private.name}/ folder")
            continue
        copy_of = digests.get(hashlib.sha256(entry.source.read_bytes()).hexdigest())
        if copy_of is not None:
            leaks.append(f"{entry.name} is a copy of {copy_of.relative_to(private)}")
        for source in _python_sources(entry):
            for body, name in _function_bodies(source).items():
                if body in bodies:
                    leaks.append(f"{entry.name}: {name}() has the body of {bodies[body]}()")
    return leaks


# -- the two builds ---------------------------------------------------------------------------


def build_autograder(
    assignment_name: str | None, *, output: Path | None = None, course_root: Path | None = None
) -> Built:
    """The zip to upload on Gradescope's "Configure Autograder" page."""
    course_root = course_root or find_course_root()
    assignment = load_assignment(assignment_name, root=course_root / "assignments")
    target = output or Path("dist") / f"{assignment.id}_autograder.zip"
    locked = ensure_lock(assignment, course_root)
    built = _build_zip(target, autograder_entries(assignment, course_root))
    return dataclasses.replace(built, wrote=(locked,) if locked else ())


def starter_leaks(assignment: Assignment, course_root: Path | None = None) -> list[str]:
    """What the starter kit would carry of the private solutions, one line each."""
    course_root = course_root or course_of(assignment)
    entries = starter_entries(assignment, course_root)
    return [
        *find_leaks(entries, course_root / "solutions"),
        *(
            find_leaks(entries, assignment.solutions_dir)
            if not _inside(assignment.solutions_dir, course_root / "solutions")
            else []
        ),
    ]


def build_notebook(assignment_name: str | None, *, course_root: Path | None = None) -> Path:
    """Write the assignment's walkthrough notebook from its `[walkthrough]` template."""
    from grader.notebook.walkthrough import write_walkthrough

    course_root = course_root or find_course_root()
    return write_walkthrough(load_assignment(assignment_name, root=course_root / "assignments"))


def build_starter(
    assignment_name: str | None, *, output: Path | None = None, course_root: Path | None = None
) -> Built:
    """The students' kit, in one top folder; refuses to write it if anything private leaks."""
    course_root = course_root or find_course_root()
    assignment = load_assignment(assignment_name, root=course_root / "assignments")
    leaks = starter_leaks(assignment, course_root)
    if leaks:
        raise ConfigError(
            "the starter kit would leak private material, so it was not written:\n  "
            + "\n  ".join(leaks)
            + "\nMove these out of grader/ and assignments/, or rewrite them."
        )
    target = output or Path("dist") / f"{assignment.id}_starter.zip"
    locked = ensure_lock(assignment, course_root)
    pyproject = _first_with("pyproject.toml", course_root, PACKAGE_ROOT) / "pyproject.toml"
    constraints = _first_with("constraints.txt", course_root, PACKAGE_ROOT) / "constraints.txt"
    readme = (assignment.directory / "README.md").is_file()
    # Written for the kit, in place of the tree's files of the same name.
    written = {
        "pyproject.toml": kit_pyproject(assignment, pyproject, readme=readme),
        f"assignments/{assignment.id}/assignment.toml": kit_manifest(
            assignment.directory.joinpath("assignment.toml").read_text("utf-8")
        ),
    }
    if constraints.is_file():
        written["constraints.txt"] = kit_constraints(assignment, constraints)
    with tempfile.TemporaryDirectory(prefix="grader-kit-") as scratch:
        entries = [e for e in starter_entries(assignment, course_root) if e.name not in written]
        for number, (name, text) in enumerate(written.items()):
            path = Path(scratch) / str(number)
            path.write_text(text, encoding="utf-8")
            entries.append(ZipEntry(name, path))
        built = _build_zip(target, entries, prefix=f"{assignment.id}/")
    return dataclasses.replace(built, wrote=(locked,) if locked else ())
