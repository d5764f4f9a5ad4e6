"""Where grading seeds come from: one secret seed per grading run, one derived seed per test.

The hidden tests draw their inputs from these seeds, so a student who could predict them
could precompute the answers: the grading seed comes from `secrets` (never from `random`,
whose state a student's code or a timestamp could reveal), and each test's seed is derived
from it by a hash, so knowing one test's inputs tells nothing of another's.
"""

from __future__ import annotations

import hashlib
import secrets

# Seeds are 31-bit so that every generator the probes use (torch, numpy, random) takes them.
SEED_LIMIT = 2**31
# Hidden seeds are derived from the grading seed; public fixtures use seeds below this.
HIDDEN_SEED_FLOOR = 10_000


def grading_seed(requested: int | None = None) -> int:
    """`requested` (a --seed, a resumed batch's seed), else a fresh secret one."""
    return requested if requested is not None else secrets.randbelow(SEED_LIMIT)


def hidden_seed(grading_seed: int, test_id: str) -> int:
    """A seed per test and grading run, never in the public fixtures' range."""
    digest = hashlib.sha256(f"{grading_seed}:{test_id}".encode()).digest()
    return HIDDEN_SEED_FLOOR + int.from_bytes(digest[:4], "big") % (SEED_LIMIT - HIDDEN_SEED_FLOOR)
