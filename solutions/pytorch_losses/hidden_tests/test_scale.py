"""Hidden tests of part `scale`: differential, on inputs drawn from the hidden seed."""

from __future__ import annotations

import probes
import pytest

from grader.testing import assert_tensor_close


@pytest.mark.points(3)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale_matches_reference(compare, seed, device, dtype):
    """scale(x, f) matches the reference on random x"""
    got, want = compare(
        probes.scale_probe, seed=seed, device=device, dtype=dtype, shape=[7, 3], factor=-1.5
    )
    assert_tensor_close(got["y"], want["y"], what="scale(x, -1.5)")


@pytest.mark.points(1)
def test_scale_leaves_x_unchanged(compare, seed, device):
    """scale(x, f) returns a new tensor and leaves x as it was"""
    got, want = compare(
        probes.scale_probe, seed=seed, device=device, dtype="float64", shape=[5], factor=2.0
    )
    assert_tensor_close(
        got["x_after"], want["x_after"], what="x after scale(x, 2.0)",
        hint="Return x * factor; do not multiply x in place (x *= factor).",
    )
