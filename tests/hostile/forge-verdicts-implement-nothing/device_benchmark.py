"""Hostile: nothing implemented; the probes are rewritten to report success."""

import sys

import torch

probes = sys.modules.get("probes")


def _forged_pick_device(part):
    available = torch.cuda.is_available()
    return {
        "type": "device",
        "is_device": True,
        "str": "cuda" if available else "cpu",
        "device_type": "cuda" if available else "cpu",
        "cuda_available": available,
    }


def _forged_peak_tflops(part, **kwargs):
    return {"values": [1.0, 1.0, 1.0, 1.0], "types": ["float", "float", "float", "float"]}


def _forged_matmul_tflops(part, **kwargs):
    return {"value": 1.0, "value_type": "float", "own_low": 1.0, "own_high": 1.0}


def _forged_fake_clock(part, **kwargs):
    return {"value": 1.0, "matmuls": 0, "clock_reads": 0, "matmul_dtypes": [], "expected": 1.0}


if probes is not None:
    # Replace the code of the probe objects themselves: they may already have been looked up.
    probes.pick_device.__code__ = _forged_pick_device.__code__
    probes.peak_tflops.__code__ = _forged_peak_tflops.__code__
    probes.matmul_tflops.__code__ = _forged_matmul_tflops.__code__
    probes.matmul_tflops_fake_clock.__code__ = _forged_fake_clock.__code__


def pick_device():
    raise NotImplementedError("pick_device")


def peak_tflops(num_sms, units_per_sm, flops_per_unit_per_cycle, clock_ghz):
    raise NotImplementedError("peak_tflops")


def matmul_tflops(n, device, dtype=torch.float32, repeats=10):
    raise NotImplementedError("matmul_tflops")
