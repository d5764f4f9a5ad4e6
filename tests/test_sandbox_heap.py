"""Collapsing a process's private memory into huge pages (grader/sandbox/heap.py).

Tried in a child process of its own, which loads the module by path as the fork server does:
the memory it allocated must end up in 2 MiB pages, with its contents unchanged.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.sandbox import heap

THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")

CHILD = textwrap.dedent(
    """
    import hashlib, importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("heap", sys.argv[1])
    heap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(heap)

    def anon_huge_kib():
        with open("/proc/self/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
        return 0

    # 64 MiB of private memory in 4 KiB pages, each written, like an interpreter's heap.
    data = bytearray(64 << 20)
    for offset in range(0, len(data), 4096):
        data[offset] = offset % 251
    before = hashlib.sha256(data).hexdigest(), anon_huge_kib()
    heap.collapse_private_memory()
    after = hashlib.sha256(data).hexdigest(), anon_huge_kib()
    print(json.dumps({"before": before, "after": after}))
    """
)


def _collapse_supported() -> bool:
    """MADV_COLLAPSE needs Linux 6.1 and transparent huge pages not set to `never`."""
    try:
        setting = THP_SETTING.read_text()
    except OSError:
        return False
    release = tuple(int(part) for part in platform.release().split("-")[0].split(".")[:2])
    return "[never]" not in setting and release >= (6, 1)


@pytest.mark.skipif(not _collapse_supported(), reason="no MADV_COLLAPSE on this kernel")
def test_private_memory_is_collapsed_into_huge_pages_with_its_contents_kept() -> None:
    completed = subprocess.run(
        [sys.executable, "-I", "-c", CHILD, heap.__file__],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(completed.stdout)
    (digest_before, huge_before), (digest_after, huge_after) = seen["before"], seen["after"]
    assert digest_after == digest_before
    # Most of the 64 MiB (its ends need not be aligned to 2 MiB) is now in huge pages.
    assert huge_after - huge_before >= 48 << 10, seen
