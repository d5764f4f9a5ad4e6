"""Part 6: the hardware half of the lecture, peak and achieved FLOP/s.

Lecture idea: a GPU has many simple cores grouped into streaming multiprocessors (SMs).
Its theoretical peak is just arithmetic (cores * FLOP per core per cycle * clock), and
a large matmul gets close to it. Measuring what you actually achieve has one trap:
CUDA operations are *asynchronous*. `a @ b` on a GPU returns as soon as the kernel is
queued, long before it has run, so a timer read right away measures the launch, not
the work. Call `torch.cuda.synchronize(device)` before reading the clock (both before
starting and before stopping it).
"""

from __future__ import annotations

import time  # noqa: F401  (you will need time.perf_counter)

import torch

# Untimed matmuls before the measurement: the first calls pay one-off costs (CUDA
# context and cuBLAS handle creation, kernel selection, memory allocation).
WARMUP_MATMULS = 2  # SOLUTION


def pick_device() -> torch.device:
    """Return `torch.device("cuda")` when CUDA is available, else `torch.device("cpu")`.

    Code that takes its device from here (or from its inputs) runs unchanged on a laptop
    and on a GPU server; hard-coding `"cuda"` does not.
    """
    # BEGIN SOLUTION
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    # END SOLUTION


def peak_tflops(
    num_sms: int, units_per_sm: int, flops_per_unit_per_cycle: int, clock_ghz: float
) -> float:
    """Return the theoretical peak throughput in TFLOP/s (10**12 FLOP per second).

    peak = num_sms * units_per_sm * flops_per_unit_per_cycle * clock (in cycles per
    second). Examples from the lecture (an RTX-class GPU at 1.77 GHz):
      - 72 SMs * 64 FP32 cores * 2 FLOP (a fused multiply-add) = 16.3 TFLOP/s;
      - 72 SMs * 8 tensor cores * 128 FLOP = 130 TFLOP/s.

    Mind the units: GHz is 10**9 cycles per second, TFLOP/s is 10**12 FLOP per second.
    """
    # BEGIN SOLUTION
    gflops = num_sms * units_per_sm * flops_per_unit_per_cycle * clock_ghz
    return gflops / 1000
    # END SOLUTION


def _synchronize(device: torch.device) -> None:  # SOLUTION
    # CUDA kernels are launched asynchronously: the Python call returns before the GPU
    # has finished, so the clock may only be read once the device has caught up.
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_tflops(
    n: int, device: torch.device | str, dtype: torch.dtype = torch.float32, repeats: int = 10
) -> float:
    """Return the achieved TFLOP/s of an (n, n) @ (n, n) matmul on `device`.

    Steps:
      1. create two random (n, n) matrices directly on `device` with `dtype`
         (`torch.randn(n, n, device=device, dtype=dtype)`), so no copy is timed;
      2. warm up: run a matmul or two untimed (the first calls pay one-off costs);
      3. synchronize the device, read `time.perf_counter()`, run `repeats` matmuls,
         synchronize again, read the clock again;
      4. count 2 * n**3 FLOPs per matmul (n**2 dot products of length n, each n
         multiplies and n adds) and return total FLOPs / seconds / 1e12.

    `torch.cuda.synchronize` only applies when the device is a CUDA device
    (`torch.device(device).type == "cuda"`); on the CPU, work is already synchronous.
    Without it, a GPU timing reports impossibly high numbers, and the grader notices.
    """
    # BEGIN SOLUTION
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    device = torch.device(device)
    # Create the operands where they are used: copying them over would be timed too.
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    for _ in range(WARMUP_MATMULS):
        a @ b
    _synchronize(device)

    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _synchronize(device)
    elapsed_s = time.perf_counter() - start

    # An n x n by n x n matmul does n**2 dot products of length n: n multiplies and
    # n adds each.
    flops = 2 * n**3 * repeats
    return flops / elapsed_s / 1e12
    # END SOLUTION
