"""run_bounded: each task in a limited child; one that overruns or dies costs only itself."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from grader.intake.bounded import (
    CRASHED,
    OUT_OF_MEMORY,
    TIMEOUT,
    Outcome,
    RememberedOutcomes,
    remembering,
    run_bounded,
)


def _sleep_forever() -> Any:
    while True:
        time.sleep(1)


def _allocate_too_much() -> Any:
    return len(bytearray(4 << 30))


def _die() -> Any:
    os.kill(os.getpid(), signal.SIGKILL)


def test_values_come_back_in_order() -> None:
    outcomes = run_bounded([lambda: [1, "a"], lambda: {"b": None}], seconds=30)
    assert outcomes == [Outcome(value=[1, "a"]), Outcome(value={"b": None})]


def test_a_task_that_overruns_is_killed_and_the_next_ones_still_run() -> None:
    outcomes = run_bounded([lambda: 1, _sleep_forever, lambda: 3], seconds=0.5)
    assert outcomes == [Outcome(value=1), Outcome(failure=TIMEOUT), Outcome(value=3)]


def test_a_task_over_its_memory_bound_fails_alone() -> None:
    outcomes = run_bounded([_allocate_too_much, lambda: 2], seconds=30, memory_bytes=256 << 20)
    assert outcomes == [Outcome(failure=OUT_OF_MEMORY), Outcome(value=2)]


def test_a_task_that_kills_its_child_fails_alone() -> None:
    outcomes = run_bounded([_die, lambda: 2], seconds=30)
    assert outcomes == [Outcome(failure=CRASHED), Outcome(value=2)]


def test_no_child_outlives_the_call() -> None:
    run_bounded([_sleep_forever], seconds=0.2)
    with pytest.raises(ChildProcessError):  # killed and reaped: no child left at all
        os.waitpid(-1, os.WNOHANG)


def test_a_remembered_failure_is_not_paid_again_even_in_the_next_run(tmp_path: Path) -> None:
    remembered = RememberedOutcomes()
    with remembering(remembered):
        first = run_bounded([_sleep_forever, lambda: 2], seconds=0.3, keys=["slow", "quick"])
        again = run_bounded([_die, _die], seconds=0.3, keys=["slow", "quick"])
    assert first == [Outcome(failure=TIMEOUT), Outcome(value=2)]
    # The overrun is answered from memory; the quick task, cheaper to run than to hold, runs.
    assert again == [Outcome(failure=TIMEOUT), Outcome(failure=CRASHED)]
    with remembering(remembered):
        assert run_bounded([_die], seconds=0.3, keys=["dies"]) == [Outcome(failure=CRASHED)]
        assert run_bounded([lambda: 3], seconds=0.3, keys=["dies"]) == [Outcome(failure=CRASHED)]
    remembered.save(tmp_path / "kept.json")
    with remembering(RememberedOutcomes.load(tmp_path / "kept.json")):
        assert run_bounded([_die], seconds=0.3, keys=["slow"]) == [Outcome(failure=TIMEOUT)]
        # A crash, which may be the grader's own fault, is remembered for one run only.
        assert run_bounded([lambda: 3], seconds=0.3, keys=["dies"]) == [Outcome(value=3)]
        # Other bounds are another check.
        assert run_bounded([_die], seconds=0.4, keys=["slow"]) == [Outcome(failure=CRASHED)]
    # Outside a remembering block, keys change nothing.
    assert run_bounded([_die], seconds=0.3, keys=["slow"]) == [Outcome(failure=CRASHED)]
