"""Make a process that has imported torch cheap to fork: its private memory in 2 MiB pages.

torch leaves a process with some 220 MB of private memory (the interpreter's objects and
torch's own heap) in 4 KiB pages. Every fork copies one page-table entry per page, and every
exit frees them one by one: 19 ms for a fork, a trivial task and an exit, against 7 ms once
the same memory is collapsed into 2 MiB pages, a few hundred times fewer entries. A child
that writes to a huge page it shares gets a private copy of only the 4 KiB it wrote.

Collapsing copies the memory once (0.35 CPU-s here), so it is done where it pays: in the
sandbox's zygote, which forks a server per part and every job from it, and in a grading
worker once it grades a second submission (its bounded children fork from it).

Loaded by path by the sandbox server (server.py), so it uses only the standard library.
"""

from __future__ import annotations

import ctypes

MADV_COLLAPSE = 25  # Linux 6.1+; where it is missing, madvise fails and nothing changes
HUGE_PAGE = 2 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def collapse_private_memory() -> None:
    """Ask the kernel to back this process's anonymous writable memory with 2 MiB pages.

    Best effort: a region the kernel cannot collapse stays in 4 KiB pages. Regions already
    mapped with huge pages are left as they are (nothing is copied again).
    """
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            regions = [line.split() for line in maps]
    except OSError:
        return
    for fields in regions:
        start, end = (int(address, 16) for address in fields[0].split("-"))
        name = fields[5] if len(fields) > 5 else ""
        if "w" not in fields[1] or name not in ("", "[heap]"):
            continue
        start, end = -(-start // HUGE_PAGE) * HUGE_PAGE, end // HUGE_PAGE * HUGE_PAGE
        if end - start >= HUGE_PAGE:
            _libc.madvise(start, end - start, MADV_COLLAPSE)
