"""Public tests of part 6, device_benchmark: picking a device and measuring FLOP/s."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType

import pytest
import torch

from grader.testing import assert_scalar_close

PART_ID = "device_benchmark"
# No CPU comes near this many float32 TFLOP/s, and no GPU either in float32 without
# tensor cores; a figure above it means the clock was read before the work finished.
IMPLAUSIBLE_TFLOPS = 1000.0


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@pytest.mark.points(2)
def test_pick_device(part: ModuleType) -> None:
    """pick_device returns the CUDA device when there is one, else the CPU"""
    device = part.pick_device()
    assert isinstance(device, torch.device), (
        f"pick_device must return a torch.device, got {type(device).__name__}."
    )
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert device.type == want, f"pick_device returned {device}, expected a {want} device."


@pytest.mark.points(3)
@pytest.mark.parametrize(
    ("num_sms", "units_per_sm", "flops_per_unit_per_cycle", "clock_ghz", "want"),
    [
        (72, 64, 2, 1.77, 16.31232),  # FP32 cores, from the lecture
        (72, 8, 128, 1.77, 130.49856),  # tensor cores, from the lecture
        (132, 128, 2, 1.98, 66.90816),
    ],
    ids=["fp32-cores", "tensor-cores", "other-gpu"],
)
def test_peak_tflops(
    part: ModuleType,
    num_sms: int,
    units_per_sm: int,
    flops_per_unit_per_cycle: int,
    clock_ghz: float,
    want: float,
) -> None:
    """peak_tflops computes SMs * units * FLOP per cycle * clock, in TFLOP/s"""
    got = part.peak_tflops(num_sms, units_per_sm, flops_per_unit_per_cycle, clock_ghz)
    assert_scalar_close(
        float(got) if isinstance(got, int) else got,
        want,
        what=f"peak_tflops({num_sms}, {units_per_sm}, {flops_per_unit_per_cycle}, {clock_ghz})",
        hint="GHz is 1e9 cycles per second and TFLOP/s is 1e12 FLOP per second.",
        rel_tol=1e-9,
    )


@pytest.mark.points(3)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_matmul_tflops_on_cpu_is_plausible(part: ModuleType, dtype: torch.dtype) -> None:
    """matmul_tflops on the CPU returns a plausible positive TFLOP/s figure"""
    for device in ("cpu", torch.device("cpu")):
        tflops = part.matmul_tflops(128, device, dtype=dtype, repeats=3)
        assert isinstance(tflops, float) and math.isfinite(tflops), (
            f"matmul_tflops must return a finite float, got {tflops!r:.80}."
        )
        assert 1e-5 < tflops < IMPLAUSIBLE_TFLOPS, (
            f"matmul_tflops(128, {device!r}) = {tflops:.4g} TFLOP/s is not plausible for a CPU. "
            "Count 2 * n**3 FLOPs per matmul and divide by seconds and by 1e12."
        )


@pytest.mark.points(2)
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_matmul_tflops_on_gpu_synchronizes(part: ModuleType) -> None:
    """matmul_tflops on the GPU synchronizes before reading the clock"""
    tflops = part.matmul_tflops(4096, torch.device("cuda"), dtype=torch.float32, repeats=10)
    assert 0 < tflops < IMPLAUSIBLE_TFLOPS, (
        f"matmul_tflops reported {tflops:.4g} TFLOP/s, more than the GPU can do: call "
        "torch.cuda.synchronize(device) before reading time.perf_counter()."
    )
