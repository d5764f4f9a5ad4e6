"""Public tests of part `scale`."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

from grader.testing import assert_tensor_close


@pytest.mark.points(1)
def test_scale_keeps_the_shape(part: ModuleType) -> None:
    """scale(x, f) has x's shape and dtype"""
    x = torch.zeros(2, 5)
    y = part.scale(x, 3.0)
    assert isinstance(y, torch.Tensor), f"scale returned {type(y).__name__}, expected a tensor."
    assert y.shape == x.shape, f"scale returned shape {tuple(y.shape)}, expected (2, 5)."
    assert y.dtype == x.dtype, f"scale returned {y.dtype}, expected {x.dtype}."


@pytest.mark.points(2)
def test_scale_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """scale(x, 2.5) matches the reference's output on the public fixture"""
    got = part.scale(expected["x"].clone(), expected["factor"])
    assert_tensor_close(got, expected["y"], what="scale(x, 2.5)")
