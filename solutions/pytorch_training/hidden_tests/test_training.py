"""Hidden tests of part `training`: train_model's losses, predict, held-out accuracy."""

from __future__ import annotations

import math
from pathlib import Path

import probes
import pytest
import torch

from grader.testing import LOSS_RTOL, assert_losses_close

SOLUTIONS = Path(__file__).resolve().parents[1]
DIGITS = probes.load_digits(SOLUTIONS.parents[1] / "assignments/pytorch_training/digits.pt")
# The held-out digits: their inputs go to the student side, their labels never do.
HELD_OUT = probes.load_digits(SOLUTIONS / "held_out_digits.pt")
TRAINING = {"hidden": 48, "epochs": 6, "batch_size": 50, "learning_rate": 0.1}
# The reference scores 0.944 to 0.962 on the held-out digits over validation seeds.
LOW_ACCURACY, HIGH_ACCURACY = 0.5, 0.9

LOSS_HINT = (
    "Per step: loss = F.cross_entropy(model(inputs), labels), optimizer.zero_grad(), "
    "loss.backward(), optimizer.step(), losses.append(loss.item()). Build one "
    "DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=0) and "
    "torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9), call model.train() "
    "first, and draw no other random numbers (the seed fixes the shuffle and dropout)."
)


def _held_out_order(seed: int) -> torch.Tensor:
    """The held-out digits in an order drawn from the seed, so that no grading run's
    predictions fit another's."""
    return torch.randperm(len(HELD_OUT["y"]), generator=torch.Generator().manual_seed(seed))


@pytest.mark.points(12)
def test_train_losses(compare, seed, device):
    """train_model: the loss of every step matches the reference"""
    got, want = compare(probes.train_losses, seed=seed, device=device, digits=DIGITS, **TRAINING)
    assert got["losses"]["values"] is not None, (
        f"train_model returned a {got['losses']['type']}: expected a Python list of floats, "
        "one loss.item() per step."
    )
    losses, expected = got["losses"]["values"], want["losses"]["values"]
    cause = _curve_cause(losses, expected) if len(losses) == len(expected) else None
    assert_losses_close(
        losses,
        expected,
        what="losses returned by train_model",
        dtype=torch.float32,
        hint=f"{cause} {LOSS_HINT}" if cause else LOSS_HINT,
    )


@pytest.mark.points(8)
def test_predict(compare, seed, device):
    """predict: the predicted classes match the reference, in eval mode"""
    got, want = compare(probes.predict_twice, seed=seed, device=device, hidden=48, n=200)
    first, second = got["first"], got["second"]
    assert isinstance(first, torch.Tensor) and first.shape == want["first"].shape, (
        "predict returned "
        + (f"shape {list(first.shape)}" if isinstance(first, torch.Tensor) else repr(first)[:80])
        + f": expected a tensor of {len(want['first'])} class indices, one per row of x."
    )
    if isinstance(second, torch.Tensor) and not torch.equal(first, second):
        raise AssertionError(
            "predict gave different classes for the same inputs on two calls: dropout was "
            "still active. Call model.eval() before predicting (and torch.no_grad())."
        )
    wrong = int((first.cpu().to(torch.int64) != want["first"].cpu()).sum())
    assert wrong == 0 and first.dtype == torch.int64, (
        f"predict: {wrong} of {len(first)} classes differ from the reference (dtype "
        f"{first.dtype}, expected torch.int64). Return model(x).argmax(dim=1) in eval mode."
    )


# Any good training earns this accuracy, whatever its seed: the test cannot tell a student's
# own seeded run from another correct run, so it opens no gate. It counts once the training
# has matched the reference's losses on seeded inputs (a `predict` that answers by nearest
# neighbour with no training at all scored here while this waited for predict alone). The
# labels it is scored against never leave this side, so an accuracy cannot be made up there.
@pytest.mark.counts_after("test_train_losses")
@pytest.mark.points(15)
def test_held_out_accuracy(compare, seed, device, metric, leaderboard):
    """train_model and predict: accuracy on held-out digits"""
    order = _held_out_order(seed)
    got, want = compare(
        probes.held_out_predictions,
        seed=seed,
        device=device,
        digits=DIGITS,
        held_out_x=HELD_OUT["x"][order],
        **TRAINING,
    )
    labels = HELD_OUT["y"][order].to(torch.int64)
    predictions = got["predictions"]
    assert isinstance(predictions, torch.Tensor) and predictions.shape == labels.shape, (
        f"predict returned {_described(predictions)} for {len(labels)} held-out digits: "
        "expected one class index per digit."
    )
    accuracy = float((predictions.cpu().to(torch.int64) == labels).float().mean())
    reference = float((want["predictions"].cpu() == labels).float().mean())
    leaderboard("held-out accuracy", accuracy)
    metric(accuracy, low=LOW_ACCURACY, high=HIGH_ACCURACY, name="held-out accuracy")
    assert accuracy > LOW_ACCURACY, (
        f"held-out accuracy {accuracy:.3f} (the reference: {reference:.3f}) is at or below "
        f"{LOW_ACCURACY}: the model did not learn. Check that each batch's labels belong to its "
        "inputs (shuffle through the DataLoader, never x and y apart), that gradients are "
        "zeroed every step, and that predict returns argmax over the classes."
    )


def _described(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"


def _curve_cause(losses: list[float], expected: list[float]) -> str | None:
    """What the shape of a loss curve that differs from the reference's says went wrong: one
    that explodes, one that never falls, or one that falls far below the reference's."""
    if not losses or not all(isinstance(loss, float) for loss in losses):
        return None
    epoch = max(1, len(expected) // TRAINING["epochs"])
    first, last = _mean(losses[:epoch]), _mean(losses[-epoch:])
    expected_first, expected_last = _mean(expected[:epoch]), _mean(expected[-epoch:])
    step, peak = max(enumerate(losses), key=lambda pair: _finite_or_inf(pair[1]))
    differs = _first_difference(losses, expected)
    if differs == 0:
        return (
            "The first loss differs already, before any update: each batch must hold inputs "
            "with their own labels, as the DataLoader shuffles them together, and the loss is "
            "F.cross_entropy(model(inputs), labels)."
        )
    curve = (
        f"your loss averages {first:.3g} over the first epoch and {last:.3g} over the last "
        f"(the reference's: {expected_first:.3g} and {expected_last:.3g})"
    )
    if not math.isfinite(peak) or peak > 2 * losses[0]:
        where = f"it reaches {peak:.3g} at step {step}, from {losses[0]:.3g} at step 0"
        if differs == 1:
            return (
                f"The training diverges ({where}), from its first update on: the step is too "
                "large. Pass lr=learning_rate as given, with momentum=0.9."
            )
        return (
            f"The training diverges ({where}) although its first update matched: gradients "
            "add up over the steps unless optimizer.zero_grad() runs before every backward."
        )
    if last >= 0.9 * first and expected_last < 0.5 * expected_first:
        return (
            f"The loss does not fall: {curve}, so the weights never change. Per batch: "
            "optimizer.zero_grad(), loss.backward(), then optimizer.step(): a step taken "
            "before backward finds no gradient."
        )
    if last < 0.5 * expected_last:
        return (
            f"The loss falls far below what one pass over the data per epoch reaches: {curve}. "
            "The model memorises the few digits it trains on (overfitting), and does worse on "
            "digits it has not seen: iterate over every batch of the DataLoader once per epoch."
        )
    return None


def _first_difference(losses: list[float], expected: list[float]) -> int | None:
    for step, (loss, want) in enumerate(zip(losses, expected, strict=True)):
        if not math.isclose(loss, want, rel_tol=LOSS_RTOL[torch.float32]):
            return step
    return None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _finite_or_inf(value: float) -> float:
    return value if math.isfinite(value) else math.inf
