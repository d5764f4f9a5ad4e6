"""Hidden tests of part `training`: train_model's losses, predict, held-out accuracy."""

from __future__ import annotations

from pathlib import Path

import probes
import pytest
import torch

from grader.testing import assert_losses_close

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


@pytest.mark.points(15)
def test_train_losses(compare, seed, device):
    """train_model: the loss of every step matches the reference"""
    got, want = compare(probes.train_losses, seed=seed, device=device, digits=DIGITS, **TRAINING)
    assert got["losses"]["values"] is not None, (
        f"train_model returned a {got['losses']['type']}: expected a Python list of floats, "
        "one loss.item() per step."
    )
    assert_losses_close(
        got["losses"]["values"],
        want["losses"]["values"],
        what="losses returned by train_model",
        dtype=torch.float32,
        hint=LOSS_HINT,
    )


@pytest.mark.points(10)
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
@pytest.mark.points(20)
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
    assert accuracy > LOW_ACCURACY, (
        f"held-out accuracy {accuracy:.3f} (the reference: {reference:.3f}) is at or below "
        f"{LOW_ACCURACY}: the model did not learn. Check that each batch's labels belong to its "
        "inputs (shuffle through the DataLoader, never x and y apart), that gradients are "
        "zeroed every step, and that predict returns argmax over the classes."
    )
    metric(accuracy, low=LOW_ACCURACY, high=HIGH_ACCURACY, name="held-out accuracy")


def _described(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"
