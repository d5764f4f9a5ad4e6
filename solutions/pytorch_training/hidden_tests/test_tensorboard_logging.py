"""Hidden tests of part `tensorboard_logging`: what train_with_logging wrote for TensorBoard.

The event files are the student's bytes: read_scalars parses them in a bounded child of the
grading process, and the logged values must agree with the losses and accuracies the
training returned, and with the reference's on the same seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import probes
import pytest
import torch

from grader.testing import assert_losses_close, read_scalars

SOLUTIONS = Path(__file__).resolve().parents[1]
DIGITS = probes.load_digits(SOLUTIONS.parents[1] / "assignments/pytorch_training/digits.pt")
TRAINING = {"hidden": 32, "epochs": 3, "batch_size": 100, "learning_rate": 0.1}
LOSS_TAG, ACCURACY_TAG = "train/loss", "val/accuracy"

TRAIN_HINT = (
    "Train as in part `training` (one shuffled DataLoader, SGD with momentum 0.9, "
    "zero_grad/backward/step per batch, model.train() for each epoch), and after each epoch "
    "measure the validation accuracy in model.eval() under torch.no_grad()."
)


def _logged(compare: Any, seed: int, device: str) -> tuple[dict[str, Any], dict[str, Any]]:
    got, want = compare(probes.logged_training, seed=seed, device=device, digits=DIGITS, **TRAINING)
    assert "losses" in got, (
        f"train_with_logging returned a {got['type']}: expected a dict with 'losses' and "
        "'val_accuracy', each a list of floats."
    )
    return got, want


def _scalars(got: dict[str, Any], tag: str, what: str) -> list[tuple[int, float]]:
    """The (step, value) pairs logged under `tag`, saying what was logged when none were."""
    assert got["files"], (
        "train_with_logging wrote no file into log_dir: create "
        "SummaryWriter(log_dir) and close it (or use it in a `with` block) at the end."
    )
    scalars = read_scalars(got["files"])
    if tag not in scalars:
        found = ", ".join(f"'{name}'" for name in sorted(scalars)) or "none"
        raise AssertionError(
            f"no scalar was logged under the tag '{tag}' ({what}); tags logged: {found}. "
            f"Use writer.add_scalar('{tag}', value, step) exactly."
        )
    return scalars[tag]


def _check_steps(logged: list[tuple[int, float]], count: int, tag: str, unit: str) -> None:
    steps = [step for step, _ in logged]
    assert steps == list(range(count)), (
        f"'{tag}' was logged at steps {_brief(steps)}; expected one value per {unit} at steps "
        f"0 to {count - 1}, in order. Pass the {unit} counter as add_scalar's global_step."
    )


def _brief(steps: list[int]) -> str:
    return str(steps) if len(steps) <= 8 else f"{steps[:4]} ... {steps[-2:]} ({len(steps)})"


@pytest.mark.points(6)
def test_returned_losses(compare, seed, device):
    """train_with_logging: the losses it returns match the reference"""
    got, want = _logged(compare, seed, device)
    assert got["losses"]["values"] is not None, (
        f"'losses' is a {got['losses']['type']}: expected a list of floats, one per step."
    )
    assert_losses_close(
        got["losses"]["values"],
        want["losses"]["values"],
        what="losses returned by train_with_logging",
        dtype=torch.float32,
        hint=TRAIN_HINT,
    )


@pytest.mark.points(7)
def test_loss_logged_per_step(compare, seed, device):
    """train_with_logging: the training loss logged under 'train/loss' at every step"""
    got, want = _logged(compare, seed, device)
    expected = want["losses"]["values"]
    logged = _scalars(got, LOSS_TAG, "the training loss, once per step")
    _check_steps(logged, len(expected), LOSS_TAG, "step")
    values = [value for _, value in logged]
    assert_losses_close(
        values,
        expected,
        what=f"the losses logged under '{LOSS_TAG}'",
        dtype=torch.float32,
        hint="Log loss.item() of each step, the same value you append to the returned losses.",
    )
    if got["losses"]["values"] is not None:
        assert_losses_close(
            values,
            got["losses"]["values"],
            what=f"the losses logged under '{LOSS_TAG}', against those train_with_logging returned",
            dtype=torch.float32,
            hint="Log the same loss.item() you append to the returned losses.",
        )


@pytest.mark.points(7)
def test_accuracy_logged_per_epoch(compare, seed, device):
    """train_with_logging: the validation accuracy logged under 'val/accuracy' every epoch"""
    got, want = _logged(compare, seed, device)
    expected = want["val_accuracy"]["values"]
    logged = _scalars(got, ACCURACY_TAG, "the validation accuracy, once per epoch")
    _check_steps(logged, len(expected), ACCURACY_TAG, "epoch")
    values = [value for _, value in logged]
    assert_losses_close(
        values,
        expected,
        what=f"the validation accuracies logged under '{ACCURACY_TAG}'",
        dtype=torch.float32,
        hint="After each epoch: model.eval(), then under torch.no_grad() the share of "
        "validation digits whose argmax is the label, a float in [0, 1].",
    )
    returned = got["val_accuracy"]["values"]
    assert returned is not None and returned == pytest.approx(values, abs=1e-6), (
        f"'val_accuracy' returned {returned if returned is None else _brief(returned)}, but "
        f"{_brief(values)} was logged: return the accuracies you log."
    )
