"""Hidden tests of part `device_benchmark` (10 points): devices and FLOP/s."""

from __future__ import annotations

import math
import time

import probes
import pytest
import torch

from grader.testing import FLOAT_TYPE_NAMES, assert_runs_on_gpu, assert_scalar_close


# pick_device takes no input, so no answer can depend on the hidden seed: the verdict is the
# student side's report, which counts only once test_peak_tflops passes.
@pytest.mark.self_reported
@pytest.mark.points(2)
def test_pick_device(student):
    """pick_device: returns torch.device('cuda') exactly when CUDA is available"""
    got = student(probes.pick_device)
    assert got["is_device"], (
        f"pick_device returned a {got['type']} ({got['str']!r}), expected a torch.device: "
        "return torch.device('cuda') or torch.device('cpu')."
    )
    expected = "cuda" if got["cuda_available"] else "cpu"
    assert got["device_type"] == expected, (
        f"pick_device returned {got['str']!r} where torch.cuda.is_available() is "
        f"{got['cuda_available']}; expected a {expected} device."
    )


@pytest.mark.points(3)
def test_peak_tflops(compare, seed):
    """peak_tflops: theoretical peaks in TFLOP/s match the reference"""
    configs = probes.peak_tflops_configs(seed)
    got, want = compare(probes.peak_tflops, seed=seed)
    for config, value, expected in zip(configs, got["values"], want["values"], strict=True):
        args = ", ".join(str(v) for v in config)
        assert_scalar_close(
            value,
            expected,
            what=f"peak_tflops({args})",
            rel_tol=1e-6,
            hint="SMs * units per SM * FLOP per unit per cycle * cycles per second gives "
            "FLOP/s; the clock is in GHz (1e9 cycles/s) and the answer in TFLOP/s (1e12 "
            "FLOP/s), so the result is the product divided by 1000.",
        )


def _own_tflops(n, device, dtype, repeats):
    """A careful measurement, taken here on the grading side (see _measured_around)."""
    dev, dt = torch.device(device), getattr(torch, dtype)
    a = torch.randn(n, n, device=dev, dtype=dt)
    b = torch.randn(n, n, device=dev, dtype=dt)
    for _ in range(2):
        a @ b
    if dev.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return 2 * n**3 * repeats / (time.perf_counter() - started) / 1e12


def _measured_around(student, **call):
    """The student's matmul_tflops, with our own measurement right before and right after.

    Ours runs in this process, not the probe's: a correct timing function in the student's
    process could be borrowed by the student's own code.
    """
    before = _own_tflops(**call)
    got = student(probes.matmul_tflops, **call)
    after = _own_tflops(**call)
    return got, min(before, after), max(before, after)


TIMING_HINT = (
    "Count 2 * n**3 FLOPs per matmul, multiply by `repeats`, divide by the elapsed seconds "
    "(time.perf_counter()) and by 1e12. Run a warm-up matmul first, create the operands on "
    "`device` with `dtype` before starting the clock, and on a GPU call "
    "torch.cuda.synchronize() before reading the clock both times."
)


# With a clock that advances by the FLOPs each matmul does, at a fixed rate (CPU), the figure
# depends only on how FLOPs and matmuls are counted; n, repeats and the rate come from the
# seed, so this is the one test of matmul_tflops whose answer a rewritten probe cannot know
# without the formula, nor get by timing smaller matmuls than it counts.
@pytest.mark.points(1)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_tflops_counts_flops(compare, seed, dtype):
    """matmul_tflops: counts 2*n**3 FLOPs per timed matmul (checked with a test clock)"""
    n, repeats, seconds = probes.fake_clock_setup(seed)
    call = f"matmul_tflops({n}, 'cpu', dtype=torch.{dtype}, repeats={repeats})"
    got, want = compare(probes.matmul_tflops_fake_clock, dtype=dtype, seed=seed)
    wanted = f"torch.{dtype}"
    assert got["matmul_dtypes"] in ([], [wanted]), (
        f"{call} ran its matmuls in {', '.join(got['matmul_dtypes'])}. Create both operands "
        "with dtype=dtype, so the figure measures the precision that was asked for."
    )
    assert got["matmuls"] > 0, (
        f"{call} ran no matrix multiplication this test could see. Time real matmuls of "
        "torch tensors (a @ b or torch.matmul) and compute the figure from that timing."
    )
    square = f"{n}x{n} @ {n}x{n}"
    # Membership, not equality: a warm-up matmul of another size is untimed and harmless.
    assert square in got["matmul_shapes"], (
        f"{call} multiplied operands of shapes {', '.join(got['matmul_shapes'])}, never "
        f"{square}; time matmuls of an n x n by an n x n tensor, as the docstring asks: the "
        "figure is the throughput of that size."
    )
    assert got["clock_reads"] >= 2, (
        f"{call} read no clock this test could replace. Time the matmuls with "
        "time.perf_counter(), read before and after the loop."
    )
    ratio = got["value"] / want["value"]
    # Timing the warm-up matmul with the others is tolerated: the figure is then
    # repeats / (repeats + 1) of the right one. The tolerance covers the clock reads.
    assert any(
        math.isclose(ratio, accepted, rel_tol=1e-4) for accepted in (1, repeats / (repeats + 1))
    ), (
        f"with a test clock that advances exactly {seconds:.6g} s per {n} x {n} matmul (and "
        f"in proportion to the FLOPs for other sizes), {call} "
        f"returned {got['value']:.6g} TFLOP/s, expected {want['value']:.6g} ({ratio:.3g} "
        "times that). Count 2 * n**3 FLOPs per matmul (n multiplies and n adds for each of "
        "the n**2 outputs), time exactly `repeats` matmuls (use the argument, not a fixed "
        "number) and convert to TFLOP/s (divide by 1e12)."
    )


# A real measurement is timed in the student's process, where it can be made up: it counts
# only once the counting, checked above, passes.
@pytest.mark.self_reported
@pytest.mark.counts_after("test_matmul_tflops_counts_flops")
@pytest.mark.points(1)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_tflops(student, device, dtype):
    """matmul_tflops: returns a plausible TFLOP/s figure for real matmuls on the device"""
    # A real measurement on the grading device, against the grader's own right before and after.
    n = 384
    got, low, high = _measured_around(student, device=device, dtype=dtype, n=n, repeats=10)
    value = got["value"]
    call = f"matmul_tflops({n}, {device!r}, {dtype})"
    assert got["matmul_dtypes"] in ([], [f"torch.{dtype}"]), (
        f"{call} ran its matmuls in {', '.join(got['matmul_dtypes'])}: the figure measures "
        "another precision than the one asked for. Create both operands with dtype=dtype."
    )
    assert got["value_type"] in FLOAT_TYPE_NAMES, (
        f"matmul_tflops returned a {got['value_type']}, expected a Python float."
    )
    assert math.isfinite(value) and value > 0, (
        f"{call} returned {value}, expected a positive TFLOP/s figure.\nHint: {TIMING_HINT}"
    )
    upper = 50.0 if device == "cpu" else 2000.0
    assert 1e-4 < value < upper, (
        f"{call} returned {value:.4g} TFLOP/s, which is not plausible on {device} (a careful "
        f"measurement by the grader, right before and after, gave {low:.3g} to {high:.3g}). "
        f"Check the units: TFLOP/s is 1e12 FLOP per second.\nHint: {TIMING_HINT}"
    )
    # Wide margins: the grading machine may be busy, so timings are noisy; a unit mistake
    # is a factor of 1000.
    assert low / 20 <= value <= high * 20, (
        f"{call} returned {value:.4g} TFLOP/s, but a careful measurement by the grader right "
        f"before and after gave {low:.3g} to {high:.3g} TFLOP/s (more than 20x apart).\n"
        f"Hint: {TIMING_HINT}"
    )


@pytest.mark.cuda_only
@pytest.mark.self_reported
@pytest.mark.counts_after("test_matmul_tflops_counts_flops")
@pytest.mark.points(1)
def test_matmul_tflops_synchronised_on_gpu(student, device):
    """matmul_tflops: on a GPU, the figure for n=4096 is below what the card can do"""
    got, low, high = _measured_around(student, device=device, dtype="float32", n=4096, repeats=10)
    value = got["value"]
    assert math.isfinite(value) and 0 < value < 1000, (
        f"matmul_tflops(4096, 'cuda') returned {value:.4g} TFLOP/s; no GPU does float32 "
        "matmuls that fast, so the clock was read before the GPU finished. Call "
        "torch.cuda.synchronize() before reading the clock, before and after the loop."
    )
    assert value <= high * 1.5, (
        f"matmul_tflops(4096, 'cuda') returned {value:.4g} TFLOP/s, but a synchronised "
        f"measurement by the grader gave at most {high:.3g}; the timing stops before "
        "the GPU has finished. Call torch.cuda.synchronize() before reading the clock."
    )
    assert value >= low / 10, (
        f"matmul_tflops(4096, 'cuda') returned {value:.4g} TFLOP/s, far below the "
        f"{low:.3g} TFLOP/s measured by the grader on the same GPU.\nHint: {TIMING_HINT}"
    )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """device_benchmark.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "device_benchmark.py")
