"""Read `assignments/<id>/assignment.toml`: the parts, files, points and limits of an assignment."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course.environment import Environment, parse_environment
from grader.course.policy.config import CoursePolicy, parse_policy
from grader.course.root import (
    AssignmentChoiceNeeded,
    AssignmentFiles,
    assignments_dir,
    enclosing_assignment,
    guess_from_files,
)
from grader.errors import ConfigError
from grader.grading.hints import Hint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (Gradescope's Ubuntu 22.04 image)
    import tomli as tomllib

GRADESCOPE_VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


@dataclass(frozen=True)
class Part:
    id: str
    file: str
    points: float
    # Gradescope visibility of this part's hidden tests (None: the manifest's [visibility]).
    visibility: str | None = None

    @property
    def module(self) -> str:
        return Path(self.file).stem


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 60.0
    memory_mb: int = 3072
    max_processes: int = 64
    max_file_mb: int = 64
    max_output_kb: int = 64
    # Wall seconds all of one part's tests get together (None: twice timeout_s). Without it
    # a file that sleeps just under the per-test limit at import held a grade for parts x
    # tests x timeout_s (an hour in a batch) and still scored full marks.
    part_budget_s: float | None = None
    # The platform's timeout for one whole grade (Gradescope's default: 10 minutes), which
    # `validate` checks the parts' budgets against.
    grade_timeout_s: float = 600.0

    @property
    def part_budget(self) -> float:
        """The wall seconds one part's tests get in all."""
        return self.part_budget_s if self.part_budget_s is not None else 2 * self.timeout_s


@dataclass(frozen=True)
class Assignment:
    id: str
    title: str
    directory: Path
    parts: tuple[Part, ...]
    limits: Limits
    notebook: str | None
    solutions_dir: Path
    hidden_visibility: str
    public_visibility: str
    # The assignment's own error hints ([[hints]]), tried before the generic ones.
    hints: tuple[Hint, ...] = ()
    # Late penalty, submission limit and what the grade keeps ([policy]).
    policy: CoursePolicy = field(default_factory=CoursePolicy)
    # The packages it needs beyond the grader's own ([environment]).
    environment: Environment = field(default_factory=Environment)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(part.file for part in self.parts)

    @property
    def max_score(self) -> float:
        return sum(part.points for part in self.parts)

    @property
    def hidden_tests_dir(self) -> Path:
        return self.solutions_dir / "hidden_tests"

    @property
    def public_tests_dir(self) -> Path:
        return self.directory / "public_tests"

    def part(self, part_id: str) -> Part:
        for part in self.parts:
            if part.id == part_id:
                return part
        raise ConfigError(f"{self.id} has no part {part_id!r}; parts: {self.part_ids()}")

    def part_ids(self) -> str:
        return ", ".join(part.id for part in self.parts)

    def hidden_visibility_of(self, part: Part) -> str:
        """When Gradescope shows students the results of `part`'s hidden tests."""
        return part.visibility or self.hidden_visibility


def available_assignments(root: Path | None = None) -> list[str]:
    """The assignment ids under `root` (default: the course's assignments/ folder)."""
    folder = root or assignments_dir()
    return sorted(p.parent.name for p in folder.glob("*/assignment.toml"))


def load_assignment(name: str | None, *, root: Path | None = None) -> Assignment:
    """Load the named assignment, or the only one when `name` is None."""
    root = root or assignments_dir()
    names = available_assignments(root)
    if name is None:
        if len(names) > 1:
            raise AssignmentChoiceNeeded(root, names)
        if not names:
            raise ConfigError(
                f"no assignment found under {root}; create one: python -m grader new NAME"
            )
        name = names[0]
    if name not in names:
        raise ConfigError(
            f"no assignment {name!r} under {root}; available: {', '.join(names) or 'none'}."
        )
    return parse_manifest(root / name / "assignment.toml")


def choose_assignment(
    name: str | None, submission: Path | None = None, *, root: Path | None = None
) -> tuple[Assignment, str]:
    """The named assignment, else the only one, else the one `submission` is in or holds.

    Returns the assignment and, when it was inferred among several, a note saying why.
    """
    root = root or assignments_dir()
    names = available_assignments(root)
    if name is not None or len(names) <= 1 or submission is None:
        return load_assignment(name, root=root), ""
    inside = enclosing_assignment(submission, names)
    if inside is not None:
        return load_assignment(inside, root=root), f"{inside}: {submission} is inside its folder"
    manifests = {}
    for candidate in names:
        assignment = load_assignment(candidate, root=root)
        manifests[candidate] = AssignmentFiles(
            files=(*assignment.files, *([assignment.notebook] if assignment.notebook else [])),
            part_ids=tuple(part.id for part in assignment.parts),
        )
    guessed = guess_from_files(submission, manifests)
    if guessed is None:
        raise AssignmentChoiceNeeded(root, names)
    return load_assignment(guessed, root=root), (
        f"{guessed}: {submission} holds its files and no other assignment's"
    )


def parse_manifest(path: Path) -> Assignment:
    """Parse and validate one manifest, naming the file and key of anything wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the manifest: {error}") from error
    meta = _table(data, "assignment", path)
    parts_data = data.get("parts")
    if not isinstance(parts_data, list) or not parts_data:
        raise ConfigError(f"{path}: needs at least one [[parts]] entry.")
    parts = tuple(_part(entry, path) for entry in parts_data)
    ids = [p.id for p in parts]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: part ids must be unique, got {ids}.")
    limits_data = data.get("limits", {})
    try:
        limits = Limits(**limits_data)
    except TypeError as error:
        raise ConfigError(f"{path}: [limits]: {error}") from error
    visibility = data.get("visibility", {})
    hidden = visibility.get("hidden", "after_published")
    public = visibility.get("public", "visible")
    for key, value in (("hidden", hidden), ("public", public)):
        if value not in GRADESCOPE_VISIBILITIES:
            raise ConfigError(
                f"{path}: [visibility] {key} = {value!r}; use one of {GRADESCOPE_VISIBILITIES}."
            )
    solutions = meta.get("solutions", f"solutions/{meta.get('id', path.parent.name)}")
    return Assignment(
        id=str(meta.get("id", path.parent.name)),
        title=str(meta.get("title", path.parent.name)),
        directory=path.parent,
        parts=parts,
        limits=limits,
        notebook=meta.get("notebook"),
        solutions_dir=(path.parent.parent.parent / solutions).resolve(),
        hidden_visibility=hidden,
        public_visibility=public,
        hints=tuple(_hint(entry, path, ids) for entry in data.get("hints", [])),
        policy=parse_policy(data.get("policy"), path),
        environment=parse_environment(data.get("environment"), path),
    )


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: missing the [{key}] table.")
    return value


def _part(entry: Any, path: Path) -> Part:
    if not isinstance(entry, dict) or not {"id", "file", "points"} <= entry.keys():
        raise ConfigError(f"{path}: every [[parts]] entry needs id, file and points: {entry!r}.")
    file = str(entry["file"])
    if "/" in file or "\\" in file or not file.endswith(".py"):
        raise ConfigError(f"{path}: part file {file!r} must be a plain .py file name.")
    visibility = entry.get("visibility")
    if visibility is not None and visibility not in GRADESCOPE_VISIBILITIES:
        raise ConfigError(
            f"{path}: [[parts]] {entry['id']!r} visibility = {visibility!r}; use one of "
            f"{GRADESCOPE_VISIBILITIES}."
        )
    return Part(
        id=str(entry["id"]), file=file, points=float(entry["points"]), visibility=visibility
    )


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _hint(entry: Any, path: Path, part_ids: list[str]) -> Hint:
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("text"), str)
        and _string_list(entry.get("match"))
        and entry["match"]
        and _string_list(entry.get("parts", []))
    ):
        raise ConfigError(
            f"{path}: every [[hints]] entry needs text (a string), match (a non-empty list of "
            f"error-text substrings) and optionally parts (a list of part ids): {entry!r}."
        )
    unknown = set(entry.get("parts", [])) - set(part_ids)
    if unknown:
        raise ConfigError(f"{path}: [[hints]] names unknown parts {sorted(unknown)}.")
    parts = tuple(entry.get("parts", []))
    return Hint(match=tuple(entry["match"]), text=entry["text"], parts=parts)
