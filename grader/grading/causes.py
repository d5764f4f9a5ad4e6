"""Why a test failed, and a fingerprint of what a wrong answer was, decided on the trusted side.

Both are computed from what the grader already knows (the test's outcome, the sandbox's own
failure message, the submission's problems) and from the student's outputs after they were
decoded as plain data, never from anything the student's code reports about itself.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Any, Literal

from grader.results.model import PartResult, TestResult

Cause = Literal[
    "missing file",
    "does not compile",
    "crashed",
    "wrong answer",
    "timeout",
    "limit exceeded",
]
MISSING_FILE: Cause = "missing file"
DOES_NOT_COMPILE: Cause = "does not compile"
CRASHED: Cause = "crashed"
WRONG_ANSWER: Cause = "wrong answer"
TIMEOUT: Cause = "timeout"
LIMIT_EXCEEDED: Cause = "limit exceeded"
CAUSES: tuple[Cause, ...] = (
    WRONG_ANSWER,
    CRASHED,
    DOES_NOT_COMPILE,
    MISSING_FILE,
    TIMEOUT,
    LIMIT_EXCEEDED,
)
# Openings of the sandbox's own messages for a process stopped at a resource limit (memory,
# GPU memory, CPU time). The sandbox writes these first words itself; a student's exception
# text only ever follows "Your code raised", so it cannot take one of these openings.
_LIMIT_OPENINGS = ("Your code used ", "Your code ran out of memory", "Your code was killed")
# The submission check's words for a source file over the size limit.
_OVERSIZED_MARK = "KiB limit for a source file"
# Significant digits kept of each value: answers equal to this precision are the same answer.
FINGERPRINT_DIGITS = 4
# Containers deeper than this are fingerprinted by their type alone.
FINGERPRINT_DEPTH = 8
# Values of a tensor rounded at a time (2 MiB per float64 temporary).
FINGERPRINT_CHUNK = 1 << 18


def student_failure_cause(
    outcome: str,
    message: str,
    *,
    file_present: bool,
    source: str,
    problem: str | None,
) -> Cause:
    """The cause of a test that stopped on the student side (a `StudentFailure`)."""
    if outcome == "timeout":
        return TIMEOUT
    if problem is not None and _OVERSIZED_MARK in problem:
        return LIMIT_EXCEEDED
    if not file_present:
        return MISSING_FILE if source == "missing" else DOES_NOT_COMPILE
    if problem is not None:
        return DOES_NOT_COMPILE
    if message.startswith(_LIMIT_OPENINGS):
        return LIMIT_EXCEEDED
    return CRASHED


def report_test_cause(test: TestResult, part: PartResult | None) -> str:
    """The cause of a failed test read from a report.json, recorded or (older reports) inferred."""
    if test.cause in CAUSES:
        return test.cause
    if test.outcome == "failed":
        return WRONG_ANSWER
    if test.outcome == "timeout":
        return TIMEOUT
    if part is not None:
        if part.source == "missing":
            return MISSING_FILE
        if part.problem:
            return DOES_NOT_COMPILE
    return CRASHED


def output_fingerprint(value: Any) -> str:
    """A short hash of decoded student outputs, their values rounded to a few digits."""
    digest = hashlib.sha256()
    for chunk in _canonical(value, FINGERPRINT_DEPTH):
        digest.update(chunk)
    return digest.hexdigest()[:16]


def combine_fingerprints(fingerprints: list[str]) -> str:
    """One fingerprint for a test that compared several outputs ("" if none, or one is unknown)."""
    items = fingerprints
    if not items or not all(items):
        return ""
    if len(items) == 1:
        return items[0]
    return hashlib.sha256("|".join(items).encode()).hexdigest()[:16]


def _round(number: float) -> float:
    if not math.isfinite(number) or number == 0:
        return number + 0.0  # -0.0 and 0.0 are one answer
    return float(f"{number:.{FINGERPRINT_DIGITS}g}")


def _canonical(value: Any, depth: int) -> Iterable[bytes | memoryview]:
    import torch

    kind = type(value)
    if kind is torch.Tensor:
        tensor = value.detach().cpu()
        yield f"T{tuple(tensor.shape)}{tensor.dtype}:".encode()
        if tensor.is_floating_point() or tensor.is_complex():
            tensor = torch.view_as_real(tensor) if tensor.is_complex() else tensor
            yield from _rounded_tensor(tensor.reshape(-1))
        else:
            # The tensor's own memory, not a copy of it.
            yield memoryview(tensor.contiguous().numpy()).cast("B")
    elif depth <= 0:
        yield f"<{kind.__name__}>".encode()
    elif kind is float:
        yield f"f{_round(value)!r};".encode()
    elif kind in (int, bool, str, bytes, type(None)):
        yield f"{kind.__name__}{value!r};".encode()
    elif kind in (list, tuple):
        yield f"{kind.__name__}{len(value)}[".encode()
        for element in value:
            yield from _canonical(element, depth - 1)
        yield b"]"
    elif kind is dict:
        yield f"dict{len(value)}{{".encode()
        for key in sorted(value, key=repr):
            yield repr(key).encode() + b"="
            yield from _canonical(value[key], depth - 1)
        yield b"}"
    else:
        yield f"<{kind.__name__}>".encode()


def _rounded_tensor(flat: Any) -> Iterable[bytes]:
    """The values on one grid for the whole tensor, FINGERPRINT_DIGITS digits of its largest.

    One grid per tensor (not per element) makes noise around zero (1e-9 for 0.0) vanish, as
    it does in a tolerance comparison; non-finite values are kept apart by kind. Worked in
    slices of FINGERPRINT_CHUNK values: the rounding's float64 and int64 temporaries of a
    whole student tensor (a float16 one grows 4x in float64) would cost the grading process
    many times the tensor's size.
    """
    import torch

    chunks = [flat[i : i + FINGERPRINT_CHUNK] for i in range(0, len(flat), FINGERPRINT_CHUNK)]
    largest = 0.0
    for chunk in chunks:
        finite = chunk[torch.isfinite(chunk)]
        if finite.numel():
            largest = max(largest, float(finite.abs().max()))
    exponent = math.floor(math.log10(largest)) - (FINGERPRINT_DIGITS - 1) if largest > 0 else 0
    yield f"e{exponent}:".encode()
    for chunk in chunks:
        values = chunk.double()
        steps = torch.round(torch.where(torch.isfinite(values), values, 0.0) / 10.0**exponent)
        yield steps.to(torch.int64).numpy().tobytes()
    for chunk in chunks:
        kinds = torch.where(torch.isnan(chunk), 1, torch.where(chunk > 0, 2, 3))
        yield torch.where(torch.isfinite(chunk), 0, kinds).to(torch.int8).numpy().tobytes()
