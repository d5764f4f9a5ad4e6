"""Which file of an uploaded folder to grade: its loose files, else its one archive or notebook.

Gradescope hands over the student's upload as a folder, and a class folder holds one folder
per student; in both, students upload the kit's zip or their notebook as often as the loose
files. `gradescope` picks before grading; `prepare_submission` picks when a folder holds none
of the assignment's files loose, so `grade` and `batch` grade such a folder as Gradescope
does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.course.manifest import Assignment
from grader.intake.archive import walk_submission


@dataclass(frozen=True)
class Upload:
    """What an uploaded folder holds that could be graded."""

    folder: Path
    # Whether any of the assignment's own files lie in it (at any depth).
    loose: bool
    # Its archives, then its notebooks, in the order they are picked: shallow before deep,
    # then by name, so the same upload always picks the same file.
    bundles: tuple[Path, ...]

    def shown(self) -> list[str]:
        return [str(path.relative_to(self.folder)) for path in self.bundles]


def survey_upload(folder: Path, assignment: Assignment) -> Upload:
    """The assignment's files and the archives and notebooks in `folder`; hidden files are
    never counted, links never followed (the trusted side reads the upload as root)."""
    known = set(assignment.files) | ({assignment.notebook} if assignment.notebook else set())
    loose = False
    bundles: list[Path] = []
    for path in walk_submission(folder).files:
        if path.name in known:
            loose = True
        elif (
            path.name.lower().endswith((".zip", ".ipynb"))
            and not path.name.startswith(".")  # macOS's ._ copies are never the student's
            and not path.is_symlink()
        ):
            bundles.append(path)
    bundles.sort(
        key=lambda p: (not p.name.lower().endswith(".zip"), len(p.relative_to(folder).parts), p)
    )
    return Upload(folder, loose, tuple(bundles))


def ignored_beside_loose_files(upload: Upload) -> tuple[str, ...]:
    """The note on archives and notebooks left out because loose files were graded."""
    if upload.loose and upload.bundles:
        return (f"Graded the loose files you uploaded; ignored {', '.join(upload.shown())}.",)
    return ()


def pick_upload(folder: Path, assignment: Assignment) -> tuple[Path, tuple[str, ...]]:
    """The path to grade inside an uploaded folder, and notes on how it was chosen."""
    return choose_from(survey_upload(folder, assignment), assignment)


def choose_from(upload: Upload, assignment: Assignment) -> tuple[Path, tuple[str, ...]]:
    """What to grade of a surveyed upload, and notes on how it was chosen: loose files (at
    any depth) win; otherwise a single .zip, then a single notebook of any name."""
    if upload.loose:
        return upload.folder, ignored_beside_loose_files(upload)
    if upload.bundles:
        shown = upload.shown()
        if len(shown) == 1:
            return upload.bundles[0], ()
        return upload.bundles[0], (
            f"Your upload holds {len(shown)} archives or notebooks ({', '.join(shown)}); "
            f"graded {shown[0]}. Upload just one next time.",
        )
    wanted = ", ".join(assignment.files)
    if assignment.notebook:
        wanted += f" (or {assignment.notebook})"
    return upload.folder, (
        f"None of the assignment's files were found in your upload. Upload {wanted}, "
        "or one .zip that holds them.",
    )
