# Example student submission: this part is correct.
import time

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def peak_tflops(num_sms, units_per_sm, flops_per_unit_per_cycle, clock_ghz):
    return num_sms * units_per_sm * flops_per_unit_per_cycle * clock_ghz / 1000


def matmul_tflops(n, device, dtype=torch.float32, repeats=10):
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    return 2 * n**3 * repeats / seconds / 1e12
