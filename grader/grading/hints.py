"""Hints for the usual PyTorch mistakes, judged from the text of the error a student's code raised.

Only generic PyTorch causes live here; an assignment adds hints about its own running example
with `[[hints]]` tables in its manifest (`grader/course/manifest.py`), tried first.
"""

from __future__ import annotations

import re
import types
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    """Shown when the error text contains any of `match`; `parts` limits it (empty: all parts)."""

    match: tuple[str, ...]
    text: str
    parts: tuple[str, ...] = ()

    def applies(self, message: str, part: str) -> bool:
        return (not self.parts or part in self.parts) and any(m in message for m in self.match)


# Checked before the device hints: its error text names cuda too.
NUMPY_HINT = Hint(
    ("can't convert cuda", "Can't call numpy() on Tensor that requires grad"),
    "numpy works only on CPU tensors without autograd history; stay in torch (torch.exp, "
    "tensor methods) instead of calling .numpy() or numpy functions on tensors.",
)
GENERIC_HINTS = (
    Hint(
        ("leaf Variable that requires grad is being used in an in-place operation",),
        "update the weights inside `with torch.no_grad():` (weight -= learning_rate * "
        "weight.grad), or with an optimizer's step(), so autograd does not record the update.",
    ),
    Hint(
        ("does not require grad and does not have a grad_fn",),
        "the tensor you call backward() on was not built from tensors that require grad; do "
        "not detach(), .item() or rebuild it inside torch.no_grad() before backward.",
    ),
    Hint(
        ("Trying to backward through the graph a second time",),
        "run a fresh forward pass every step; a loss (or an intermediate tensor) from an "
        "earlier step cannot be backpropagated again.",
    ),
    Hint(
        ("expected scalar type", "dtypes"),
        "mixed dtypes. Create new tensors with dtype=x.dtype (or torch.zeros_like(x)); the "
        "default dtype is float32 but tests also use float64.",
    ),
    Hint(
        ("shapes cannot be multiplied",),
        "check the shapes of the two matrices you multiply: a transpose may be missing or "
        "misplaced, or sizes are hard-coded instead of read from the inputs.",
    ),
    Hint(
        ("'NoneType' object has no attribute 'zero_'", "for *: 'float' and 'NoneType'"),
        "a tensor's .grad is None until the first backward() has filled it: zero the "
        "gradients after the update (or test `if w.grad is not None`), not before the first "
        "backward.",
    ),
)

# A frame of a Python traceback: `  File "...", line 12, in matmul_tflops`.
_FRAME = re.compile(r'File "(?P<file>[^"]*)", line \d+, in (?P<function>\w+)')


def _device_hint(message: str, device: str, takes_device: bool) -> str:
    create = (
        "with device=device (the `device` argument your function was given)"
        if takes_device
        else "with device=x.device (or torch.zeros_like(x), x.new_zeros(...))"
    )
    if "same device" in message or ("cuda" in message.lower() and "cpu" in message.lower()):
        return (
            "some of your tensors are on a different device than the others. Create new "
            f"tensors {create} and never call .cpu() or .cuda() yourself."
        )
    if device == "cpu" and any(word in message for word in ("CUDA", "cuda", "NVIDIA")):
        use = "the `device` argument" if takes_device else "the device of the inputs (x.device)"
        return (
            f"your code asked for a CUDA GPU, but this grading run is on {device}. Never "
            f"hard-code 'cuda': use {use}."
        )
    return ""


def failing_functions(traceback_text: str, file_name: str) -> list[str]:
    """Names of the functions of `file_name` in a traceback, outermost first."""
    return [
        match["function"]
        for match in _FRAME.finditer(traceback_text)
        if match["file"].rsplit("/", 1)[-1] == file_name
    ]


def has_device_parameter(code: types.CodeType) -> bool:
    """Whether the function of `code` has a parameter named device."""
    return "device" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def takes_device_argument(module: types.ModuleType, functions: Sequence[str]) -> bool:
    """Whether one of `functions` of `module` (the reference) has a parameter named device."""
    for name in functions:
        code = getattr(getattr(module, name, None), "__code__", None)
        if isinstance(code, types.CodeType) and has_device_parameter(code):
            return True
    return False


def error_hint(
    message: str,
    device: str,
    *,
    part: str = "",
    assignment_hints: Sequence[Hint] = (),
    takes_device: bool = False,
) -> str:
    """A hint line for the usual mistakes behind `message`, or "" when none applies.

    `takes_device`: the failing function has a `device` parameter, so the hint points at it
    rather than at the inputs' device.
    """
    for hint in assignment_hints:
        if hint.applies(message, part):
            return f"Hint: {hint.text}"
    if NUMPY_HINT.applies(message, part):
        return f"Hint: {NUMPY_HINT.text}"
    text = _device_hint(message, device, takes_device)
    if text:
        return f"Hint: {text}"
    for hint in GENERIC_HINTS:
        if hint.applies(message, part):
            return f"Hint: {hint.text}"
    return ""
