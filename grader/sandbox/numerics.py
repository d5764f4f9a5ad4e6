"""The numerics student code runs under, set the same way in every process that runs it.

Grading's sandbox (server.py), its trusted side (`configure_trusted_process`) and `check`'s
public-test process all call `use_grading_numerics`, so that code passing `check` computes
what it computes when graded. Loaded by path into the fork server (server.py, beside it),
so it uses only the standard library and is handed torch.
"""

from __future__ import annotations

from types import ModuleType

# Intra-op threads, the same on every side; 1 keeps parallel graders from thrashing the cores
# and makes a float sum add in one order.
GRADING_THREADS = 1


def use_grading_numerics(torch: ModuleType, threads: int) -> None:
    """Set intra-op threads, turn TF32 off and use deterministic algorithms."""
    torch.set_num_threads(threads)
    # TF32 would make float32 matmuls differ from the reference by ~1e-3 on Ampere+ GPUs.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # A training repeats exactly on a seed wherever torch can make it (on CUDA, atomics-based
    # kernels otherwise vary run to run); an op with no deterministic kernel warns rather
    # than fails. This also fills memory from torch.empty with NaN (or the integer maximum),
    # so code that reads it before writing fails here as in grading.
    torch.use_deterministic_algorithms(True, warn_only=True)
