"""Assertions for hidden and public tests whose failure messages are written for students.

Each helper checks the cheap, telling properties first (type, shape, dtype, device) and
says which one differs, then compares values with `torch.testing.assert_close` using the
per-dtype tolerances below, so a student reads "grad_w1 has shape (53, 29), expected
(29, 53)" instead of a traceback.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from grader.grading.event_files import EventFileError as EventFileError
from grader.grading.event_files import read_scalars as read_scalars
from grader.grading.metrics import MetricScore as MetricScore
from grader.grading.metrics import metric_credit as metric_credit
from grader.rules import cpu_only_uses

# Raised by `compare` and `student` when the student's code gave no result (its `exit_status`
# tells a probe's deliberate exit apart); hidden tests import it from here.
from grader.sandbox.feedback import StudentFailure as StudentFailure

# One place for tolerances. float32 allows for a different summation order (and TF32
# being off, see grader/sandbox/server.py); float64 is tight enough that real bugs never pass.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1.3e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
}
# Where a value's tolerance grows with its tensor's largest magnitude (assert_tensor_close):
# float64's rounding is too small to matter, and kept strict it still tells float32 work apart.
SCALED_ATOL_DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16})
# Losses after many training steps drift further apart through legitimate rounding.
LOSS_RTOL: dict[torch.dtype, float] = {torch.float32: 1e-3, torch.float64: 1e-6}
# Float64 losses this close to the reference's yet outside LOSS_RTOL differ by what float32
# arithmetic gives (its rounding is 6e-8 a step); a float64 bug is far larger or far smaller.
FLOAT32_LIKE_RTOL = 1e-4
# What a probe reports as the type of a value the contract calls a float: Python's, or a numpy
# scalar (np.float64 even subclasses float); both convert exactly with float().
FLOAT_TYPE_NAMES = frozenset({"float", "float16", "float32", "float64"})
# How close got / want must be to a whole factor to be called one.
FACTOR_RTOL = 1e-4
DIVERGENCE_HINT = (
    "Training diverged. Check the sign of the update (w -= learning_rate * grad, not +=) and "
    "that you use the learning_rate argument as given (a larger step makes the loss explode)."
)
# Rows of the table of worst Jacobian entries.
JACOBIAN_ROWS = 5


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}, {value.dtype}, on {value.device}"
    return f"{type(value).__name__} {value!r:.80}"


def _with_hint(message: str, hint: str | None) -> str:
    return f"{message}\nHint: {hint}" if hint else message


def _factor_names(sizes: Mapping[str, int]) -> dict[int, str]:
    """Whole factors a sum-versus-mean mix-up produces: each size and products of two."""
    names: dict[int, str] = {}
    for count in (1, 2):
        for combo in itertools.combinations(sizes.items(), count):
            value = math.prod(size for _, size in combo)
            names.setdefault(value, "*".join(name for name, _ in combo))
    return names


def constant_factor(ratio: float, sizes: Mapping[str, int] | None = None, noun: str = "") -> str:
    """Name a ratio got / want that is a whole factor (or its inverse), or "" when it is not.

    With `sizes` ({"N": 37, "D_out": 7}), a factor equal to one of them or a product of two is
    named after them: that is a sum taken where the reference averages, or the other way round.
    """
    if not math.isfinite(ratio) or ratio <= 0:
        return ""
    inverse = ratio < 1
    factor = 1 / ratio if inverse else ratio
    whole = round(factor)
    if whole < 2 or not math.isclose(factor, whole, rel_tol=FACTOR_RTOL):
        return ""
    name = _factor_names(sizes or {}).get(whole)
    times = f"1/{whole}" if inverse else f"{whole}"
    text = f"exactly {times} times the reference's {noun}".rstrip()
    if name:
        text += f" ({whole} = {name})"
    if name or whole != 2:
        text += (
            ": averaged where the reference sums (check for mean instead of sum)"
            if inverse
            else ": summed where the reference averages (check for sum instead of mean)"
        )
    return text


def _uniform_ratio(got: torch.Tensor, want: torch.Tensor) -> float:
    """got / want when it is the same for every element (within FACTOR_RTOL), else nan."""
    mask = want != 0
    if not bool(mask.any()) or bool((got[~mask] != 0).any()):
        return math.nan
    ratios = (got[mask].double() / want[mask].double()).flatten()
    first = float(ratios[0])
    if not bool(torch.allclose(ratios, torch.full_like(ratios, first), rtol=FACTOR_RTOL)):
        return math.nan
    return first


def _non_finite(got: torch.Tensor, want: torch.Tensor) -> str:
    """Where `got` holds nan or inf while the reference is finite, or ""."""
    if not (got.is_floating_point() or got.is_complex()):
        return ""
    bad = ~torch.isfinite(got) & torch.isfinite(want)
    count = int(bad.sum())
    if count == 0:
        return ""
    first = tuple(int(i) for i in bad.nonzero()[0].tolist())
    value = got[first].item() if first else got.item()
    return (
        f"holds nan or inf in {count} of {got.numel()} elements where the reference is finite "
        f"(first at index {first}: {value})"
    )


def assert_tensor_close(
    got: Any,
    want: torch.Tensor,
    *,
    what: str,
    hint: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    sizes: Mapping[str, int] | None = None,
) -> None:
    """Assert `got` is a tensor like `want` (type, shape, dtype, device) with close values.

    Values that are nan or inf, or all off by one whole factor, are named as such; `sizes`
    ({"N": 37, "D_out": 7}) names a factor that equals a size or a product of two.
    """
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
                "tensors on the inputs' device (device=x.device, or the `device` argument where "
                "your function takes one) and never call .cpu()/.cuda() yourself.",
                hint,
            )
        )
    default_rtol, default_atol = TOLERANCES.get(want.dtype, (0.0, 0.0))
    non_finite = _non_finite(got, want)
    if non_finite:
        raise AssertionError(_with_hint(f"{what} {non_finite}.", hint))
    if atol is None and want.dtype in SCALED_ATOL_DTYPES and want.numel():
        # An entry that cancels to near zero in a sum of large terms (a gradient of a matmul)
        # carries the rounding of those terms, not of itself: a float32 sum in another order,
        # or one computed in float64 and rounded once, differs there by more than a fixed
        # atol. Allowed: the tensor's rtol at its largest magnitude. A real bug is off by far
        # more.
        default_atol = max(default_atol, default_rtol * float(want.detach().abs().max()))
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
        message = str(mismatch)
        noun = "value" if want.numel() == 1 else "values, every element"
        factor = constant_factor(_uniform_ratio(got, want), sizes, noun) if want.numel() else ""
        if factor:
            message = f"{what} is {factor}.\n{message}"
        raise AssertionError(_with_hint(message, hint)) from None


def assert_losses_close(
    got: Any,
    want: Sequence[float] | torch.Tensor,
    *,
    what: str,
    hint: str | None = None,
    dtype: torch.dtype | None = None,
    rtol: float | None = None,
    sizes: Mapping[str, int] | None = None,
) -> None:
    """Assert `got` is a list of floats as long as `want`, naming the first step that diverged.

    The relative tolerance is `rtol`, else `LOSS_RTOL` for the dtype the training ran in:
    `dtype` where given, else `want`'s own where it is a tensor of losses, else float64 (a
    list of Python floats carries no dtype: pass `dtype=` for losses of float32 training).
    The message names the usual causes it can see: a nan or inf loss (training diverged), and
    a first loss that is a whole factor off (a sum where the reference averages, or the
    other way round; `sizes` as in `assert_tensor_close`).
    """
    if isinstance(want, torch.Tensor):
        dtype = want.dtype if dtype is None else dtype
        want = [float(value) for value in want.detach().cpu().reshape(-1).tolist()]
    dtype = torch.float64 if dtype is None else dtype
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
        if math.isfinite(g) and math.isclose(g, w, rel_tol=tolerance, abs_tol=1e-9):
            continue
        shown_got, shown_want = _distinct_digits(g, w)
        message = (
            f"{what}: first differs at step {step}: got {shown_got}, expected {shown_want} "
            f"(relative tolerance {tolerance:g})."
        )
        message += " Steps before it matched." if step else ""
        if not math.isfinite(g) and math.isfinite(w):
            message += f" The loss is {g} at step {step}: {DIVERGENCE_HINT}"
        elif dtype == torch.float64 and abs(g - w) <= FLOAT32_LIKE_RTOL * abs(w):
            message += (
                f" A difference this small ({abs(g - w) / abs(w):.1g} relative) is float32's "
                "rounding: keep every tensor in the data's float64 (no .float(), no "
                "dtype=torch.float32, new tensors with dtype=x.dtype)."
            )
        elif step == 0 and (factor := constant_factor(g / w if w else math.nan, sizes, "loss")):
            message += f" The first loss is {factor}."
        elif step > 0 and g > got[step - 1] and w <= want[step - 1]:
            message += (
                " Your loss grows where the reference's shrinks: check the gradients the update "
                "uses, its sign (w -= learning_rate * grad) and the learning rate."
            )
        raise AssertionError(_with_hint(message, hint))


def _distinct_digits(got: float, want: float) -> tuple[str, str]:
    """The two numbers with the fewest significant digits (6 or more) that tell them apart."""
    for digits in range(6, 18):
        shown = f"{got:.{digits}g}", f"{want:.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def assert_jacobian_close(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    *,
    what: str,
    hint: str | None = None,
    atol: float = 1e-5,
    rtol: float = 1e-3,
) -> None:
    """Assert a backward's Jacobian matches finite differences, as gradcheck does.

    `analytical[j, i]` and `numerical[j, i]` are d output j / d input i. A mismatch is shown
    as a short table of the worst entries, not the whole matrices.
    """
    for name, value in (("analytical", analytical), ("numerical", numerical)):
        if type(value) is not torch.Tensor or value.dim() != 2:
            raise AssertionError(f"{what}: the {name} Jacobian is {_describe(value)}.")
    if analytical.shape != numerical.shape:
        raise AssertionError(
            _with_hint(
                f"{what}: the gradient has the wrong shape (Jacobian {tuple(analytical.shape)}, "
                f"expected {tuple(numerical.shape)}).",
                hint,
            )
        )
    error = (analytical - numerical).abs()
    error = torch.where(torch.isfinite(error), error, torch.full_like(error, math.inf))
    bad = error > atol + rtol * numerical.abs()
    if not bool(bad.any()):
        return
    worst = torch.topk(error.flatten(), min(JACOBIAN_ROWS, int(bad.sum()))).indices.tolist()
    columns = error.shape[1]
    lines = [f"  {'output':>6} {'input':>6} {'numerical':>12} {'your backward':>14}"]
    for flat in worst:
        row, column = divmod(int(flat), columns)
        lines.append(
            f"  {row:>6} {column:>6} {float(numerical[row, column]):>12.6g} "
            f"{float(analytical[row, column]):>14.6g}"
        )
    message = (
        f"{what} disagrees with the numerical derivative of the forward in "
        f"{int(bad.sum())} of {bad.numel()} Jacobian entries (d output / d input); the worst:\n"
        + "\n".join(lines)
    )
    raise AssertionError(_with_hint(message, hint))


def assert_scalar_close(
    got: Any, want: float, *, what: str, hint: str | None = None, rel_tol: float = 1e-6
) -> None:
    """Assert `got` is a Python float close to `want`."""
    if type(got) is not float:
        raise AssertionError(
            _with_hint(f"{what}: expected a Python float, got {_describe(got)}.", hint)
        )
    if not math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-12):
        shown_got, shown_want = _distinct_digits(got, want)
        raise AssertionError(_with_hint(f"{what}: got {shown_got}, expected {shown_want}.", hint))


def assert_runs_on_gpu(source: str | None, file_name: str) -> None:
    """Assert `source` holds nothing that works on CPU tensors only (numpy on tensors).

    Meant for a test worth no points: CPU grading passes such code, and this says why it would
    fail on a GPU.
    """
    if source is None:
        return
    try:
        found = cpu_only_uses(source)
    except SyntaxError:
        return  # the part's other tests say so
    if found:
        raise AssertionError(
            f"Warning (no points lost): {file_name} calls numpy on tensors ({'; '.join(found)}). "
            "That works on CPU tensors only: on a GPU, .numpy() raises and the code fails. Stay "
            "in torch (torch.exp, tensor methods), which runs on any device."
        )
