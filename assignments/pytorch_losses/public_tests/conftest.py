"""Lets plain pytest run these tests: `cd assignments/pytorch_losses && pytest public_tests`.

`python -m grader check` loads the grader's public-test plugin itself; plain pytest needs it
named here. The plugin provides the fixtures (`part`, `load_part`, `expected`, `load_fixture`,
`device`, `student_dir`) and the `points` marker. To test the files of another folder:
`GRADER_STUDENT_DIR=path/to/files pytest public_tests`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parents[3]

# Started inside the assignment folder, pytest finds the grader only if it is installed:
# otherwise put the course folder that holds it on the import path, for the plugin below.
if importlib.util.find_spec("grader") is None and (COURSE_ROOT / "grader").is_dir():
    sys.path.insert(0, str(COURSE_ROOT))

pytest_plugins = ("grader.student.plugin",)
