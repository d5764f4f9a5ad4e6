"""What a sandbox's jobs can read, written once per submission rather than once per job.

Each part module's jobs import from a folder of their own that holds only that part's file
and the submission files it imports; a job that judges an artifact gets a folder with no
file of the submission; probe files are copied under a name of their content so that the
zygote imports each once. Where the sandbox has a uid of its own, all of it is readable by
that sandbox's group alone and writable by nobody but root.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from grader.intake.source_check import import_closure
from grader.sandbox.identity import SandboxIdentity


class SharedFiles:
    """The submission's files and the probe files, laid out under one `shared/` folder."""

    def __init__(self, folder: Path, submission_files: dict[str, Path]) -> None:
        self.folder = folder
        self.submission_files = dict(submission_files)
        # File name -> the modules it imports: a job's module folder holds its import closure.
        self.submission_imports: dict[str, tuple[str, ...]] = {}
        # The modules whose jobs' folders (`module_view`) hold this submission's files.
        self._module_views: set[str] = set()
        self._probes: dict[Path, Path] = {}

    def use_submission(
        self, submission_files: dict[str, Path], imports: Mapping[str, Iterable[str]]
    ) -> None:
        """Lay out these files for later jobs (each module's folder is written on first use)."""
        self.submission_files = dict(submission_files)
        self.submission_imports = {name: tuple(found) for name, found in imports.items()}
        self._module_views = set()

    def probe_copies(self) -> list[Path]:
        """The probe files copied so far, which a new server's zygote imports once."""
        return list(self._probes.values())

    def module_view(self, module: str, identity: SandboxIdentity | None) -> Path:
        """The files a job of `module` can import: its own and those it imports, directly or
        through another (`grader.intake.source_check.import_closure`), copied once per submission.

        Only these are on its path, and readable where the sandbox confines reads: a module
        named in a string (`unittest.mock.patch("other_part.helper")`) reaches no file that
        the part's source rules did not read.
        """
        modules = self.folder / "modules"
        folder = modules / module
        if module not in self._module_views:
            if not self._module_views:  # only the submission being graded stays visible
                shutil.rmtree(modules, ignore_errors=True)
            folder.mkdir(parents=True)
            for name in import_closure(self.submission_imports, f"{module}.py"):
                if name in self.submission_files:
                    shutil.copyfile(self.submission_files[name], folder / name)
            if identity:
                give_to_sandbox_group(identity, self.folder, modules, folder, *folder.iterdir())
            self._module_views.add(module)
        return folder

    def empty_view(self, identity: SandboxIdentity | None) -> Path:
        """A job's module folder that holds no file of the submission."""
        folder = self.folder / "no-student-code"
        if not folder.exists():
            folder.mkdir(parents=True)
            if identity:
                give_to_sandbox_group(identity, self.folder, folder)
        return folder

    def probe_copy(self, probe_file: Path, identity: SandboxIdentity | None) -> Path:
        """The probe file under a name of its content, so the server can import it just once."""
        if probe_file not in self._probes:
            content = probe_file.read_bytes()
            folder = self.folder / "probes"
            folder.mkdir(parents=True, exist_ok=True)
            copy = folder / f"{hashlib.sha256(content).hexdigest()[:24]}.py"
            copy.write_bytes(content)
            if identity:
                give_to_sandbox_group(identity, self.folder, folder, copy)
            self._probes[probe_file] = copy
        return self._probes[probe_file]


def give_to_sandbox_group(identity: SandboxIdentity, *paths: Path) -> None:
    """Readable by this sandbox's group alone (not other sandboxes' uids), writable by
    nobody but root: the student writes only through descriptors the monitor opened."""
    for path in paths:
        os.chown(path, 0, identity.gid)
        os.chmod(path, 0o750 if path.is_dir() else 0o640)
