"""Assertions for hidden and public tests whose failure messages are written for students.

Each helper checks the cheap, telling properties first (type, shape, dtype, device) and
says which one differs, then compares values with `torch.testing.assert_close` using the
per-dtype tolerances below, so a student reads "grad_w1 has shape (53, 29), expected
(29, 53)" instead of a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

# One place for tolerances. float32 allows for a different summation order (and TF32
# being off, see grader/sandbox.py); float64 is tight enough that real bugs never pass.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1.3e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
}
# Losses after many training steps drift further apart through legitimate rounding.
LOSS_RTOL: dict[torch.dtype, float] = {torch.float32: 1e-3, torch.float64: 1e-6}


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}, {value.dtype}, on {value.device}"
    return f"{type(value).__name__} {value!r:.80}"


def _with_hint(message: str, hint: str | None) -> str:
    return f"{message}\nHint: {hint}" if hint else message


def assert_tensor_close(
    got: Any,
    want: torch.Tensor,
    *,
    what: str,
    hint: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Assert `got` is a tensor like `want` (type, shape, dtype, device) with close values."""
    if type(got) is not torch.Tensor:
        raise AssertionError(
            _with_hint(f"{what}: expected a torch.Tensor, got {_describe(got)}.", hint)
        )
    if got.shape != want.shape:
        raise AssertionError(
            _with_hint(
                f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}.",
                hint,
            )
        )
    if got.dtype != want.dtype:
        raise AssertionError(
            _with_hint(
                f"{what}: dtype {got.dtype}, expected {want.dtype}. Create new tensors with "
                "dtype=x.dtype (or torch.zeros_like / x.new_zeros) instead of the default.",
                hint,
            )
        )
    if got.device != want.device:
        raise AssertionError(
            _with_hint(
                f"{what}: expected the result on {want.device}, got {got.device}. Create new "
                "tensors with device=x.device and never call .cpu()/.cuda() yourself.",
                hint,
            )
        )
    default_rtol, default_atol = TOLERANCES.get(want.dtype, (0.0, 0.0))
    try:
        torch.testing.assert_close(
            got,
            want,
            rtol=default_rtol if rtol is None else rtol,
            atol=default_atol if atol is None else atol,
            equal_nan=False,
            msg=lambda detail: f"{what} differs from the reference.\n{detail}",
        )
    except AssertionError as mismatch:
        raise AssertionError(_with_hint(str(mismatch), hint)) from None


def assert_losses_close(
    got: Any,
    want: Sequence[float],
    *,
    what: str,
    hint: str | None = None,
    dtype: torch.dtype = torch.float64,
    rtol: float | None = None,
) -> None:
    """Assert `got` is a list of floats as long as `want`, naming the first step that diverged."""
    if not isinstance(got, list) or not all(type(v) is float for v in got):
        kinds = sorted({type(v).__name__ for v in got}) if isinstance(got, list) else []
        detail = f"a list of {', '.join(kinds)}" if kinds else _describe(got)
        raise AssertionError(
            _with_hint(
                f"{what}: expected a Python list of floats (one loss.item() per step), "
                f"got {detail}.",
                hint,
            )
        )
    if len(got) != len(want):
        raise AssertionError(
            _with_hint(f"{what}: {len(got)} losses, expected {len(want)} (one per step).", hint)
        )
    tolerance = LOSS_RTOL.get(dtype, 1e-3) if rtol is None else rtol
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        if not math.isfinite(g) or not math.isclose(g, w, rel_tol=tolerance, abs_tol=1e-9):
            raise AssertionError(
                _with_hint(
                    f"{what}: first differs at step {step}: got {g:.6g}, expected {w:.6g} "
                    f"(relative tolerance {tolerance:g}). Steps before it matched.",
                    hint,
                )
            )


def assert_scalar_close(
    got: Any, want: float, *, what: str, hint: str | None = None, rel_tol: float = 1e-6
) -> None:
    """Assert `got` is a Python float close to `want`."""
    if type(got) is not float:
        raise AssertionError(
            _with_hint(f"{what}: expected a Python float, got {_describe(got)}.", hint)
        )
    if not math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-12):
        raise AssertionError(_with_hint(f"{what}: got {got:.6g}, expected {want:.6g}.", hint))
