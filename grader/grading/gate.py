"""The gate rule: which tests prove work, so that a part's forgeable verdicts may count.

A test opens its part's gate only by comparing with the reference on inputs drawn from its
hidden seed; source rules and verdicts computed on the student's side (gated by a marker, or
by how the test ran) count only once a gate-opening test passes. The plugin records these
judgements on each `TestResult`; `grader.grading.scoring` applies them.
"""

from __future__ import annotations

from typing import Any

import pytest

# One entry per `compare` call of a test: whether its arguments held the test's hidden seed.
SEEDED_COMPARES_KEY = pytest.StashKey[list[bool]]()
# Tests whose verdict alone proves nothing: a source rule (a stub obeys it), or a verdict the
# probe computed inside the sandbox, where student code can rewrite the probe. They count
# only once a gate-opening test (see `opens_gate`) passes in the same part. Markers can only
# add gating: whether a test opens the gate is decided from how it ran. `counts_after` narrows
# a gated test's gate from its part to the function it is about: it counts only once one of
# the named tests (of the same module, any of their parameters) passes as a gate-opener.
GATED_MARKERS = ("static_rule", "self_reported", "counts_after")
# How deep `compare`'s arguments are searched for the seed (lists of configs, dicts of them).
SEED_SEARCH_DEPTH = 4


def holds_seed(value: Any, seed: int, depth: int = SEED_SEARCH_DEPTH) -> bool:
    """Whether `seed` is `value` or is inside it (lists, tuples, sets, dict keys and values)."""
    if type(value) is int:
        return value == seed
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return any(holds_seed(v, seed, depth - 1) for v in (*value.keys(), *value.values()))
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_seed(v, seed, depth - 1) for v in value)
    return False


def opens_gate(item: pytest.Item) -> bool:
    """Whether `item` may open its part's gate, judged from how it ran.

    Only a comparison with the reference on inputs drawn from the hidden seed proves work: a
    test opens the gate when it called `compare`, every call passed the test's seed to the
    probe, and no gating marker says its verdict is forgeable. A test that only used
    `student`, or compared on constant inputs (a rewritten probe can return the constant
    answer), stays gated whatever its markers say.
    """
    seeded = item.stash.get(SEEDED_COMPARES_KEY, [])
    return bool(seeded) and all(seeded) and not marked_gated(item)


def marked_gated(item: pytest.Item) -> bool:
    """Whether a gating marker says `item`'s verdict proves nothing (whatever it ran)."""
    return any(item.get_closest_marker(name) for name in GATED_MARKERS)


def self_reported_by_use(item: pytest.Item) -> bool:
    """Whether `item`, with no gating marker, reports on the student side alone, judged from
    how it ran: it compared on inputs not drawn from its seed, or it made no comparison and
    never asked for `compare`. Such a test is exactly a `self_reported` one: gated, and not a
    test its part waits for. A test that asked for `compare` but stopped before calling it
    (its part's code hung, or the part ran out of time) stays one its part waits for: which
    tests those are must not depend on what a submission does.
    """
    if marked_gated(item):
        return False
    seeded = item.stash.get(SEEDED_COMPARES_KEY, [])
    if seeded:
        return not all(seeded)
    return "compare" not in getattr(item, "fixturenames", ())


def counts_after(item: pytest.Item) -> tuple[str, ...]:
    """The tests named by `item`'s `counts_after` marker ((): its part's gate applies)."""
    marker = item.get_closest_marker("counts_after")
    return tuple(str(name) for name in marker.args) if marker else ()
