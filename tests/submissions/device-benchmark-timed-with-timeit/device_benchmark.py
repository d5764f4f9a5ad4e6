"""Part 6 (reference): the hardware half of the lecture, peak and achieved FLOP/s."""

from __future__ import annotations

import timeit

import torch

# Untimed matmuls before the measurement: the first calls pay one-off costs (CUDA
# context and cuBLAS handle creation, kernel selection, memory allocation).
WARMUP_MATMULS = 2


def pick_device() -> torch.device:
    """Return torch.device('cuda') when CUDA is available, else torch.device('cpu')."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def peak_tflops(
    num_sms: int, units_per_sm: int, flops_per_unit_per_cycle: int, clock_ghz: float
) -> float:
    """Return the theoretical peak in TFLOP/s (units * FLOP per cycle * cycles per second)."""
    gflops = num_sms * units_per_sm * flops_per_unit_per_cycle * clock_ghz
    return gflops / 1000


def _synchronize(device: torch.device) -> None:
    # CUDA kernels are launched asynchronously: the Python call returns before the GPU
    # has finished, so the clock may only be read once the device has caught up.
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_tflops(
    n: int, device: torch.device | str, dtype: torch.dtype = torch.float32, repeats: int = 10
) -> float:
    """Return the achieved TFLOP/s of `repeats` n x n matmuls on `device`."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    device = torch.device(device)
    # Create the operands where they are used: copying them over would be timed too.
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    for _ in range(WARMUP_MATMULS):
        a @ b
    _synchronize(device)

    def timed() -> None:
        for _ in range(repeats):
            a @ b
        _synchronize(device)

    # The standard library's timer: timeit.timeit reads timeit.default_timer (perf_counter).
    elapsed_s = timeit.timeit(timed, number=1)

    # An n x n by n x n matmul does n**2 dot products of length n: n multiplies and
    # n adds each.
    flops = 2 * n**3 * repeats
    return flops / elapsed_s / 1e12
