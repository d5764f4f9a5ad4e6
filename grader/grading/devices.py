"""The devices grading can run on, and which one `auto` means on this machine.

A module of its own so the command line lists the choices without importing the grading
machinery.
"""

from __future__ import annotations

from pathlib import Path

from grader.errors import UsageError

# What --device takes: `auto` is CUDA where torch sees a GPU, else the CPU.
DEVICES = ("auto", "cpu", "cuda")


def _cuda_available() -> bool:
    """Whether torch sees a GPU; without an NVIDIA driver, known without importing torch."""
    if not any(Path(p).exists() for p in ("/proc/driver/nvidia", "/dev/nvidiactl")):
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(requested: str) -> str:
    """`cpu` or `cuda`: the device `requested` (one of DEVICES) grades on here."""
    if requested not in DEVICES:
        raise UsageError(f"--device {requested!r}: use one of {', '.join(DEVICES)}.")
    if requested == "auto":
        return "cuda" if _cuda_available() else "cpu"
    if requested == "cuda" and not _cuda_available():
        raise UsageError("--device cuda: no CUDA GPU is visible here; use --device cpu or auto.")
    return requested
