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


def pick_device() -> torch.device:
    """Return `torch.device("cuda")` when CUDA is available, else `torch.device("cpu")`.

    Code that takes its device from here (or from its inputs) runs unchanged on a laptop
    and on a GPU server; hard-coding `"cuda"` does not.
    """
    raise NotImplementedError("pick_device: not implemented yet (see its docstring)")


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
    raise NotImplementedError("peak_tflops: not implemented yet (see its docstring)")


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
    raise NotImplementedError("matmul_tflops: not implemented yet (see its docstring)")
