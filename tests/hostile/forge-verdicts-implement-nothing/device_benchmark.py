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


"""Hostile: nothing implemented; the probes are rewritten to report success."""

import sys

import torch

probes = _probes_in_frames()


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
