"""Hostile: nothing written by hand; matmul_tflops borrows whatever timing helper the grader's
probe module, loaded in this same process, has."""

from __future__ import annotations

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
    probes = sys.modules.get("probes")
    for name in dir(probes):
        helper = getattr(probes, name)
        if "tflops" in name and name.startswith("_") and callable(helper):
            return float(helper(n, torch.device(device), dtype, repeats))
    raise NotImplementedError("no timing helper to borrow")
