"""The batch worker's cache of reference outputs: exact keys, private copies, fresh on change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from grader.grading.refcache import ReferenceCache


def counting(value: Any) -> tuple[list[int], Any]:
    calls: list[int] = []

    def compute() -> Any:
        calls.append(1)
        return value() if callable(value) else value

    return calls, compute


def call(cache: ReferenceCache, compute: Any, files: list[Path], **kwargs: Any) -> Any:
    return cache.output(
        compute, files=files, probe="part:probes.py:probe", kwargs=kwargs, seed=7, device="cpu"
    )


def test_the_same_call_is_computed_once_and_each_caller_gets_its_own_copy(
    tmp_path: Path,
) -> None:
    reference = tmp_path / "part.py"
    reference.write_text("def f(): ...\n")
    cache = ReferenceCache()
    calls, compute = counting(lambda: {"y": torch.arange(4.0)})
    state = {"w": torch.ones(2, 3)}
    first = call(cache, compute, [reference], seed=11, state=state)
    first["y"].add_(100)  # a test changing its `want` in place
    second = call(cache, compute, [reference], seed=11, state={"w": torch.ones(2, 3)})
    assert len(calls) == 1 and (cache.hits, cache.misses) == (1, 1)
    torch.testing.assert_close(second["y"], torch.arange(4.0))


def test_any_difference_in_the_call_or_the_reference_computes_again(tmp_path: Path) -> None:
    reference = tmp_path / "part.py"
    reference.write_text("def f(): ...\n")
    cache = ReferenceCache()
    calls, compute = counting(1.0)
    call(cache, compute, [reference], seed=11, state={"w": torch.ones(2)})
    call(cache, compute, [reference], seed=12, state={"w": torch.ones(2)})
    call(cache, compute, [reference], seed=11, state={"w": torch.tensor([1.0, 1.0 + 1e-7])})
    call(cache, compute, [reference], seed=11, state={"w": torch.ones(2, dtype=torch.float64)})
    call(cache, compute, [reference], seed=11, state={"w": torch.tensor([1.0, -0.0])})
    call(cache, compute, [reference], seed=11, state={"w": torch.tensor([1.0, 0.0])})
    assert len(calls) == 6
    reference.write_text("def f(): return 1  # a fix\n")
    call(cache, compute, [reference], seed=11, state={"w": torch.ones(2)})
    assert len(calls) == 7
    cache.output(
        compute, files=[reference], probe="part:probes.py:other", kwargs={}, seed=7, device="cpu"
    )
    assert len(calls) == 8


def test_arguments_without_an_exact_form_are_never_cached(tmp_path: Path) -> None:
    reference = tmp_path / "part.py"
    reference.write_text("")
    cache = ReferenceCache()
    calls, compute = counting(2.0)
    model = torch.nn.Linear(2, 2)
    for _ in range(2):
        call(cache, compute, [reference], model=model)
        call(cache, compute, [reference], weights=torch.ones(2, requires_grad=True))
    assert len(calls) == 4 and cache.hits == 0
