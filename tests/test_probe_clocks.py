"""`pytorch_basics`' fake-clock probe reads every standard clock, and puts every one back.

`matmul_tflops_fake_clock` replaces the clocks a student's `matmul_tflops` could read with one
that advances by the FLOPs each matmul does; here it runs in this process on small modules
built from the reference, each timed another standard way, and each must give the
reference's figure. Afterwards the real clocks, timeit's bound defaults included, are back,
and the real-timing probe (`matmul_tflops`) measures real time.
"""

from __future__ import annotations

import importlib.util
import math
import time
import timeit
from types import ModuleType
from typing import Any

import pytest

from tests.support import SOLUTIONS_DIR


def _load(name: str, source: str) -> ModuleType:
    module = ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), vars(module))
    return module


def _load_probes() -> Any:
    spec = importlib.util.spec_from_file_location(
        "pytorch_basics_probes_under_test", SOLUTIONS_DIR / "hidden_tests" / "probes.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


probes = _load_probes()
REFERENCE_SOURCE = (SOLUTIONS_DIR / "device_benchmark.py").read_text(encoding="utf-8")
REFERENCE = _load("device_benchmark", REFERENCE_SOURCE)

# The reference's matmul_tflops, timed other honest ways: appended to the reference, the
# redefinition replaces it.
TIMED = """
import time
import timeit
from time import perf_counter as copied_perf_counter
from timeit import default_timer


def matmul_tflops(n, device, dtype=torch.float32, repeats=10{extra}):
    device = torch.device(device)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(WARMUP_MATMULS):
        a @ b
    _synchronize(device)

    def run():
        for _ in range(repeats):
            a @ b
        _synchronize(device)

{timing}
    return 2 * n**3 * repeats / elapsed_s / 1e12
"""
WAYS = {
    "timeit.timeit": ("", "    elapsed_s = timeit.timeit(run, number=1)"),
    "timeit.Timer.timeit": ("", "    elapsed_s = timeit.Timer(run).timeit(number=1)"),
    "timeit.Timer.repeat": ("", "    elapsed_s = min(timeit.Timer(run).repeat(3, 1))"),
    "timeit.repeat": ("", "    elapsed_s = min(timeit.repeat(run, number=1, repeat=2))"),
    "timeit.Timer with timer=": (
        "",
        "    elapsed_s = timeit.Timer(run, timer=time.perf_counter).timeit(1)",
    ),
    "timeit.default_timer copied": (
        "",
        "    start = default_timer()\n    run()\n    elapsed_s = default_timer() - start",
    ),
    "perf_counter copied": (
        "",
        "    start = copied_perf_counter()\n"
        "    run()\n"
        "    elapsed_s = copied_perf_counter() - start",
    ),
    "clock as a default argument": (
        ", clock=time.perf_counter",
        "    start = clock()\n    run()\n    elapsed_s = clock() - start",
    ),
    "clock as a keyword-only default": (
        ", *, clock=time.perf_counter_ns",
        "    start = clock()\n    run()\n    elapsed_s = (clock() - start) / 1e9",
    ),
    "time.clock_gettime": (
        "",
        "    start = time.clock_gettime(time.CLOCK_MONOTONIC)\n"
        "    run()\n"
        "    elapsed_s = time.clock_gettime(time.CLOCK_MONOTONIC) - start",
    ),
    "time.thread_time_ns": (
        "",
        "    start = time.thread_time_ns()\n"
        "    run()\n"
        "    elapsed_s = (time.thread_time_ns() - start) / 1e9",
    ),
}


def _timed(way: str) -> ModuleType:
    extra, timing = WAYS[way]
    return _load("device_benchmark", REFERENCE_SOURCE + TIMED.format(extra=extra, timing=timing))


def _real_clocks() -> dict[str, object]:
    """Every clock the probe replaces, where a later reader finds it."""
    return {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.clock_gettime": time.clock_gettime,
        "time.thread_time_ns": time.thread_time_ns,
        "timeit.default_timer": timeit.default_timer,
        "timeit.timeit defaults": timeit.timeit.__defaults__,
        "timeit.repeat defaults": timeit.repeat.__defaults__,
        "timeit.Timer defaults": timeit.Timer.__init__.__defaults__,
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("way", sorted(WAYS))
def test_every_standard_clock_is_the_test_clock(way: str, dtype: str) -> None:
    student = _timed(way)
    before = _real_clocks()
    got = probes.matmul_tflops_fake_clock(student, dtype=dtype, seed=11)
    want = probes.matmul_tflops_fake_clock(REFERENCE, dtype=dtype, seed=11)
    assert got["clock_reads"] >= 2, way
    # A few nanoseconds of clock reads apart, no more.
    assert math.isclose(got["value"], want["value"], rel_tol=1e-4), (way, got, want)
    assert _real_clocks() == before


def test_defaults_bound_in_the_student_module_are_put_back() -> None:
    student = _timed("clock as a default argument")
    keyword = _timed("clock as a keyword-only default")
    probes.matmul_tflops_fake_clock(student, dtype="float32", seed=3)
    probes.matmul_tflops_fake_clock(keyword, dtype="float32", seed=3)
    assert student.matmul_tflops.__defaults__[-1] is time.perf_counter
    assert keyword.matmul_tflops.__kwdefaults__ == {"clock": time.perf_counter_ns}


def test_clocks_are_put_back_when_the_function_raises() -> None:
    before = _real_clocks()
    failing = _load(
        "device_benchmark",
        REFERENCE_SOURCE + "\n\ndef matmul_tflops(n, device, dtype=None, repeats=10):\n"
        "    raise RuntimeError('not yet')\n",
    )
    with pytest.raises(RuntimeError, match="not yet"):
        probes.matmul_tflops_fake_clock(failing, dtype="float32", seed=5)
    assert _real_clocks() == before


def test_real_timing_is_untouched_after_the_test_clock() -> None:
    student = _timed("timeit.timeit")
    probes.matmul_tflops_fake_clock(student, dtype="float32", seed=7)
    # timeit reads the real clock again: a sleep takes its time.
    assert timeit.timeit(lambda: time.sleep(0.02), number=1) >= 0.019
    assert timeit.Timer(lambda: time.sleep(0.02)).timeit(1) >= 0.019
    # The real-timing probe measures real matmuls: a plausible CPU figure, the same order
    # as the reference's (wide bounds: the machine is shared).
    got = probes.matmul_tflops(student, device="cpu", dtype="float32", n=128, repeats=5)
    want = probes.matmul_tflops(REFERENCE, device="cpu", dtype="float32", n=128, repeats=5)
    assert 1e-4 < got["value"] < 50
    assert want["value"] / 50 < got["value"] < want["value"] * 50
