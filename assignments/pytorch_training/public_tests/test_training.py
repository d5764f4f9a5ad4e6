"""Public tests of part `training`: train_model and predict on public digits."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import load_digits, two_layer_net

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close

HINT = (
    "One DataLoader(TensorDataset(x, y), batch_size, shuffle=True, num_workers=0), "
    "SGD(lr, momentum=0.9), model.train(); per batch zero_grad, cross-entropy, backward, step."
)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's losses and predictions: 2 epochs on 300 digits, then an untrained net."""
    digits = load_digits(300)
    torch.manual_seed(4001)
    model = two_layer_net(32)
    losses = reference.train_model(
        model, digits["train_x"], digits["train_y"], epochs=2, batch_size=50, learning_rate=0.1
    )
    torch.manual_seed(4002)
    untrained = two_layer_net(32)
    x = torch.rand(40, 64, generator=torch.Generator().manual_seed(4003))
    return {
        "losses": losses,
        "val_predictions": reference.predict(model, digits["val_x"]),
        "x": x,
        "predictions": reference.predict(untrained, x),
    }


@pytest.mark.points(3)
def test_train_losses_match_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """train_model: the losses of 2 epochs on 300 digits match the expected ones"""
    digits = load_digits(300)
    torch.manual_seed(4001)
    model = two_layer_net(32)
    losses = part.train_model(
        model, digits["train_x"], digits["train_y"], epochs=2, batch_size=50, learning_rate=0.1
    )
    assert_losses_close(
        losses, expected["losses"], what="losses of train_model", dtype=torch.float32, hint=HINT
    )
    predictions = part.predict(model, digits["val_x"])
    assert torch.equal(predictions, expected["val_predictions"]), (
        "the trained model's validation predictions differ from the expected ones."
    )


@pytest.mark.points(2)
def test_predict_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """predict: the classes of an untrained net match, in eval mode"""
    torch.manual_seed(4002)
    model = two_layer_net(32)
    first = part.predict(model, expected["x"])
    assert torch.equal(first, part.predict(model, expected["x"])), (
        "two calls gave different classes: dropout is on. Call model.eval() first."
    )
    assert torch.equal(first, expected["predictions"]), (
        f"predict returned {first}; expected {expected['predictions']} (argmax over dim 1)."
    )
