"""`python -m grader build public`: the students' files of an assignment, made from its references.

The steps, in order (PUBLIC_STEPS):

1. stubs: each part's stub, assignments/<id>/<file>, from its reference's solution markers
   (grader/authoring/stubs.py);
2. fixtures: public_fixtures/<part>.pt from each public test file's `@public_fixture`, run on
   the part's reference (grader/authoring/fixtures.py); a .pt file no test records any more
   is deleted.

A step writes a file only when it changes (a fixture: beyond the grader's tolerances, so
another CPU's rounding rewrites nothing), so building twice changes nothing. `validate` runs
the same steps into a scratch folder and names each committed file that differs. A step
that renders the walkthrough notebook from the new stubs belongs at the end of the list.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.fixtures import (
    FIXTURE_SCRIPT,
    FIXTURES_FOLDER,
    fixture_file_differs,
    record_in_fresh_interpreter,
)
from grader.authoring.stubs import course_line_length, has_markers, make_stub
from grader.course.manifest import Assignment, load_assignment
from grader.course.root import find_course_root
from grader.errors import ConfigError


@dataclass(frozen=True)
class Changes:
    """What a step wrote and deleted."""

    wrote: tuple[Path, ...] = ()
    deleted: tuple[Path, ...] = ()


def build_command(assignment: Assignment) -> str:
    return f"python -m grader build public -a {assignment.id}"


def _course_of(assignment: Assignment) -> Path:
    return assignment.directory.parent.parent


def _shown(path: Path, assignment: Assignment) -> str:
    """`path` as the author knows it: relative to the course root."""
    root = _course_of(assignment)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def generated_stubs(assignment: Assignment) -> dict[Path, str]:
    """Each part's stub path and the text its reference generates."""
    line_length = course_line_length(_course_of(assignment))
    stubs: dict[Path, str] = {}
    for part in assignment.parts:
        reference = assignment.solutions_dir / part.file
        where = _shown(reference, assignment)
        source = reference.read_text(encoding="utf-8")
        if not has_markers(source):
            raise ConfigError(
                f"{where} marks no solution, so its stub would be the reference itself: put "
                "what students write between # BEGIN SOLUTION and # END SOLUTION lines "
                "(docs/authoring.md, One source per part), then run "
                f"`{build_command(assignment)}`"
            )
        stubs[assignment.directory / part.file] = make_stub(
            source, where=where, line_length=line_length
        )
    return stubs


def stub_problems(assignment: Assignment) -> list[str]:
    """Each committed stub that is not what its reference generates, in one line (a part whose
    reference marks no solution keeps a stub written by hand: `unmarked_references`)."""
    if unmarked_references(assignment):
        return []
    try:
        stubs = generated_stubs(assignment)
    except ConfigError as error:
        return [str(error)]
    return [
        f"{_shown(path, assignment)} is not what its reference generates: run "
        f"`{build_command(assignment)}` and commit the result"
        for path, text in stubs.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]


def unmarked_references(assignment: Assignment) -> list[str]:
    """The references that mark no solution (their stubs are kept by hand), as shown."""
    return [
        _shown(assignment.solutions_dir / part.file, assignment)
        for part in assignment.parts
        if (assignment.solutions_dir / part.file).is_file()
        and not has_markers((assignment.solutions_dir / part.file).read_text(encoding="utf-8"))
    ]


def write_stubs(assignment: Assignment) -> Changes:
    """Write each stub that differs from what its reference generates."""
    wrote = []
    for path, text in generated_stubs(assignment).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            wrote.append(path)
    return Changes(wrote=tuple(wrote))


def write_fixtures(assignment: Assignment) -> Changes:
    """Record the public fixtures; replace the committed ones that differ beyond tolerance."""
    script = assignment.solutions_dir / FIXTURE_SCRIPT
    if script.is_file():
        raise ConfigError(
            f"{_shown(script, assignment)} still writes the public fixtures: move what it "
            "computes into the public tests as @public_fixture functions and delete it, or run "
            "it instead (`build public` would delete the fixtures no public test records)"
        )
    committed = assignment.directory / FIXTURES_FOLDER
    with tempfile.TemporaryDirectory(prefix="grader-fixtures-") as temporary:
        recorded = Path(temporary) / FIXTURES_FOLDER
        record_in_fresh_interpreter(assignment, recorded)
        new = sorted(recorded.glob("*.pt")) if recorded.is_dir() else []
        wrote = []
        for path in new:
            target = committed / path.name
            if not target.is_file() or fixture_file_differs(path, target):
                committed.mkdir(exist_ok=True)
                shutil.copyfile(path, target)
                wrote.append(target)
    names = {path.name for path in new}
    deleted = [path for path in sorted(committed.glob("*.pt")) if path.name not in names]
    for path in deleted:
        path.unlink()
    return Changes(wrote=tuple(wrote), deleted=tuple(deleted))


PUBLIC_STEPS: tuple[Callable[[Assignment], Changes], ...] = (write_stubs, write_fixtures)


def build_public(assignment_name: str | None, *, course_root: Path | None = None) -> Changes:
    """Write the assignment's stubs and public fixtures from its references."""
    course_root = course_root or find_course_root()
    assignment = load_assignment(assignment_name, root=course_root / "assignments")
    wrote: list[Path] = []
    deleted: list[Path] = []
    for step in PUBLIC_STEPS:
        changes = step(assignment)
        wrote += changes.wrote
        deleted += changes.deleted
    return Changes(wrote=tuple(wrote), deleted=tuple(deleted))
