"""Two submissions graded by one batch worker: the second must find nothing of the first.

A batch worker keeps one sandbox warm for many submissions. The victim, graded first, has a
secret in its source, prints it and raises an exception that carries it; the thief, graded
next by the same worker, searches everything its process can reach (the objects the garbage
collector tracks and what they refer to, the frames above its own, and its raw memory, read
through ctypes) and writes whatever it found into its own feedback.
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

import pytest

from grader.results.report import report_dict
from grader.workers.process import GradingWorker
from grader.workers.protocol import WorkerConfig
from tests.support import COURSE_ROOT, PART_FILES, SOLUTIONS_DIR, evading_the_integrity_rule

VICTIM_PREPEND = """
SECRET = "VICTIM-CANARY-{token}"
print("my secret is", SECRET)


def leak_in_an_exception() -> None:
    raise ValueError("the secret is " + SECRET)
"""

# Raises in every test of the part, with what it found: the report shows the student the
# message, so anything found would be in the thief's report.
THIEF_APPEND = """

def _steal() -> list[str]:
    import ctypes
    import gc
    import re
    import sys

    pattern = re.compile(("VICTIM" + "-CANARY-").encode() + rb"[0-9a-f]{16}")
    found: set[str] = set()

    def look(data: bytes) -> None:
        found.update(match.group().decode() for match in pattern.finditer(data))

    def look_at(item: object) -> None:
        if type(item) is str:
            look(item.encode("utf-8", "replace"))
        elif type(item) in (bytes, bytearray):
            look(bytes(item))
        elif hasattr(item, "co_consts"):
            for const in item.co_consts:
                look_at(const)

    for item in gc.get_objects():
        look_at(item)
        for referent in gc.get_referents(item):
            look_at(referent)
    frame = sys._getframe()
    while frame is not None:
        look_at(frame.f_code)
        for value in list(frame.f_locals.values()):
            look_at(value)
            if type(value) is dict:
                for inner in value.values():
                    look_at(inner)
        frame = frame.f_back
    with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        name = fields[5] if len(fields) > 5 else ""
        if not fields[1].startswith("rw") or name not in ("", "[heap]", "[stack]"):
            continue
        start, end = (int(address, 16) for address in fields[0].split("-"))
        for offset in range(start, end, 1 << 20):
            look(ctypes.string_at(offset, min(1 << 20, end - offset)))
    return sorted(found)


def sigmoid(x):  # noqa: F811
    raise RuntimeError("stolen: " + (", ".join(_steal()) or "nothing"))
"""


@pytest.mark.slow
def test_a_submission_finds_nothing_of_the_one_graded_before_it(tmp_path: Path) -> None:
    token = secrets.token_hex(8)
    canary = f"VICTIM-CANARY-{token}"
    victim, thief = tmp_path / "victim", tmp_path / "thief"
    for folder in (victim, thief):
        folder.mkdir()
        for name in PART_FILES:
            shutil.copy(SOLUTIONS_DIR / name, folder / name)
    # The secret in a file the thief also has (so the same path) and in one it changes not.
    for name in ("custom_sigmoid.py", "two_layer_net.py"):
        source = (victim / name).read_text()
        head, tail = source.split("import torch\n", 1)
        (victim / name).write_text(
            head + "import torch\n" + VICTIM_PREPEND.format(token=token) + tail
        )
    with (victim / "custom_sigmoid.py").open("a") as handle:
        handle.write("\n\ndef sigmoid(x):  # noqa: F811\n    leak_in_an_exception()\n")
    with (thief / "custom_sigmoid.py").open("a") as handle:
        # Past the harness's integrity rule, which refuses this code at intake: the test is
        # about what the process could find if it ran.
        handle.write(evading_the_integrity_rule(THIEF_APPEND, "thief"))

    worker = GradingWorker(WorkerConfig("pytorch_basics", str(COURSE_ROOT), "cpu", 12345))
    try:
        victim_report = report_dict(worker.grade(victim))
        thief_report = report_dict(worker.grade(thief))
    finally:
        worker.close()

    # The victim's secret did pass through the grader: its feedback shows the exception.
    assert canary in json.dumps(victim_report)
    thief_text = json.dumps(thief_report)
    # The thief's search ran (its message reached its feedback) and found nothing.
    assert "stolen: " in thief_text
    assert token not in thief_text, "the thief read the victim's secret from its memory"
