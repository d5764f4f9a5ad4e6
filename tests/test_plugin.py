"""Pieces of the hidden-suite plugin that need no grading run."""

from __future__ import annotations

import pytest

from grader.plugin import HIDDEN_SEED_FLOOR, error_hint, hidden_seed


def test_hidden_seeds_differ_per_test_and_run_and_avoid_public_seeds() -> None:
    seeds = {hidden_seed(run, f"test_{n}") for run in range(20) for n in range(50)}
    assert len(seeds) == 1000
    assert min(seeds) >= HIDDEN_SEED_FLOOR
    assert hidden_seed(7, "a") == hidden_seed(7, "a")


@pytest.mark.parametrize(
    ("message", "device", "expected"),
    [
        (
            "Expected all tensors to be on the same device, but found cuda:0 and cpu!",
            "cuda",
            "device=x.device",
        ),
        ("Torch not compiled with CUDA enabled", "cpu", "Never hard-code 'cuda'"),
        (
            "a leaf Variable that requires grad is being used in an in-place operation.",
            "cpu",
            "torch.no_grad()",
        ),
        ("expected scalar type Double but found Float", "cpu", "dtype=x.dtype"),
        ("mat1 and mat2 shapes cannot be multiplied (37x53 and 29x53)", "cpu", "transpose"),
    ],
)
def test_common_pytorch_errors_get_a_hint(message: str, device: str, expected: str) -> None:
    assert expected in error_hint(message, device)


def test_unknown_errors_get_no_hint() -> None:
    assert error_hint("ZeroDivisionError: division by zero", "cpu") == ""
