"""Public tests of part `tensorboard_logging`: the returned values and the event files."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import load_digits, two_layer_net

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, read_scalars


def _train(part: ModuleType, log_dir: Path) -> dict[str, list[float]]:
    digits = load_digits(300)
    torch.manual_seed(4011)
    result: dict[str, list[float]] = part.train_with_logging(
        two_layer_net(32),
        digits["train_x"],
        digits["train_y"],
        digits["val_x"],
        digits["val_y"],
        epochs=2,
        batch_size=50,
        learning_rate=0.1,
        log_dir=str(log_dir),
    )
    return result


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's losses and validation accuracies: 2 epochs on 300 digits, seeded."""
    digits = load_digits(300)
    torch.manual_seed(4011)
    model = two_layer_net(32)
    with tempfile.TemporaryDirectory() as folder:
        result = reference.train_with_logging(
            model,
            digits["train_x"],
            digits["train_y"],
            digits["val_x"],
            digits["val_y"],
            log_dir=folder,
            epochs=2,
            batch_size=50,
            learning_rate=0.1,
        )
    return {"losses": result["losses"], "val_accuracy": result["val_accuracy"]}


@pytest.mark.points(2)
def test_returned_values_match_the_fixture(
    part: ModuleType, expected: dict[str, Any], tmp_path: Path
) -> None:
    """train_with_logging: the returned losses and accuracies match the expected ones"""
    result = _train(part, tmp_path / "runs")
    assert_losses_close(result["losses"], expected["losses"], what="'losses'", dtype=torch.float32)
    assert result["val_accuracy"] == pytest.approx(expected["val_accuracy"], abs=1e-6)


@pytest.mark.points(2)
def test_event_files_hold_the_scalars(part: ModuleType, tmp_path: Path) -> None:
    """the event files hold 'train/loss' per step and 'val/accuracy' per epoch"""
    log_dir = tmp_path / "runs"
    result = _train(part, log_dir)
    files = {str(p.relative_to(log_dir)): p.read_bytes() for p in log_dir.rglob("*") if p.is_file()}
    scalars = read_scalars(files)
    assert set(scalars) >= {"train/loss", "val/accuracy"}, f"tags logged: {sorted(scalars)}"
    losses = scalars["train/loss"]
    assert [step for step, _ in losses] == list(range(len(result["losses"])))
    assert_losses_close(
        [value for _, value in losses], result["losses"], what="logged losses", dtype=torch.float32
    )
    accuracies = scalars["val/accuracy"]
    assert [step for step, _ in accuracies] == list(range(len(result["val_accuracy"])))
