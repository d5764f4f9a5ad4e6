"""Hostile: nothing written by hand; matmul_tflops borrows whatever timing helper the grader's
probe module, loaded in this same process, has."""

from __future__ import annotations


def _probes_in_frames():
    """The probe module, from the frames of the import or call that runs this code: it is no
    longer in sys.modules (tests/hostile/rewrite-probes-to-return-the-formula)."""
    import sys as _frames_sys
    import types as _frames_types

    frame = _frames_sys._getframe()
    while frame is not None:
        found = frame.f_locals.get("probes")
        if isinstance(found, _frames_types.ModuleType):
            return found
        frame = frame.f_back
    return None


import sys

import torch


def pick_device() -> torch.device:
    raise NotImplementedError("pick_device")


def peak_tflops(
    num_sms: int, units_per_sm: int, flops_per_unit_per_cycle: int, clock_ghz: float
) -> float:
    raise NotImplementedError("peak_tflops")


def matmul_tflops(
    n: int, device: torch.device | str, dtype: torch.dtype = torch.float32, repeats: int = 10
) -> float:
    probes = _probes_in_frames()
    for name in dir(probes):
        helper = getattr(probes, name)
        if "tflops" in name and name.startswith("_") and callable(helper):
            return float(helper(n, torch.device(device), dtype, repeats))
    raise NotImplementedError("no timing helper to borrow")
