"""Which file of an uploaded folder to grade: its loose files, else its one archive or notebook.

Gradescope hands over the student's upload as a folder, and a class folder holds one folder
per student; in both, students upload the kit's zip or their notebook as often as the loose
files. `gradescope` picks before grading; `prepare_submission` picks when a folder holds none
of the assignment's files loose, so `grade` and `batch` grade such a folder as Gradescope
does.
"""

from __future__ import annotations

from pathlib import Path

from grader.course.manifest import Assignment
from grader.intake.archive import walk_submission


def pick_upload(folder: Path, assignment: Assignment) -> tuple[Path, tuple[str, ...]]:
    """The path to grade inside an uploaded folder, and notes on how it was chosen.

    Loose files (at any depth) win; otherwise a single .zip, then a single notebook of any
    name; hidden files are never picked. Links are never followed: the trusted side reads
    the upload as root.
    """
    known = set(assignment.files) | ({assignment.notebook} if assignment.notebook else set())
    found_known = False
    bundles: list[Path] = []
    for path in walk_submission(folder).files:
        if path.name in known:
            found_known = True
        elif (
            path.name.lower().endswith((".zip", ".ipynb"))
            and not path.name.startswith(".")  # macOS's ._ copies are never the student's
            and not path.is_symlink()
        ):
            bundles.append(path)
    # Archives before notebooks, shallow before deep, then by name: the same upload always
    # picks the same file.
    bundles.sort(
        key=lambda p: (not p.name.lower().endswith(".zip"), len(p.relative_to(folder).parts), p)
    )
    shown = [str(p.relative_to(folder)) for p in bundles]
    if found_known:
        notes = (f"Graded the loose files you uploaded; ignored {', '.join(shown)}.",)
        return folder, notes if bundles else ()
    if bundles:
        if len(bundles) == 1:
            return bundles[0], ()
        return bundles[0], (
            f"Your upload holds {len(bundles)} archives or notebooks ({', '.join(shown)}); "
            f"graded {shown[0]}. Upload just one next time.",
        )
    wanted = ", ".join(assignment.files)
    if assignment.notebook:
        wanted += f" (or {assignment.notebook})"
    return folder, (
        f"None of the assignment's files were found in your upload. Upload {wanted}, "
        "or one .zip that holds them.",
    )
