"""Public tests of part `finetuning`: prepare_finetuning and finetune on public digits."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import PRETRAINED_FILE, load_digits, two_layer_net
from torch import nn

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

FEATURES = ("linear1.weight", "linear1.bias")


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """The reference's new head and its losses: fine-tuning on 300 digits, odd or even."""
    torch.manual_seed(4031)
    model = reference.prepare_finetuning(two_layer_net(48), PRETRAINED_FILE, 2)
    head = {name: value.detach().clone() for name, value in model.linear2.named_parameters()}
    digits = load_digits(300)
    torch.manual_seed(4032)
    losses = reference.finetune(
        model, digits["train_x"], digits["train_y"] % 2, epochs=2, batch_size=50, learning_rate=0.1
    )
    return {"head": head, "losses": losses}


@pytest.mark.points(3)
def test_prepare_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """prepare_finetuning: the checkpoint's features, frozen, and the expected new head"""
    pretrained = torch.load(PRETRAINED_FILE, weights_only=True)
    torch.manual_seed(4031)
    model = part.prepare_finetuning(two_layer_net(48), PRETRAINED_FILE, 2)
    for name in FEATURES:
        parameter = model.get_parameter(name)
        assert_tensor_close(parameter.detach(), pretrained[name], what=f"'{name}' (loaded)")
        assert not parameter.requires_grad, f"'{name}' still requires grad: freeze it."
    for name, value in expected["head"].items():
        parameter = model.linear2.get_parameter(name)
        assert parameter.requires_grad, f"the new head's '{name}' must require grad."
        assert_tensor_close(
            parameter.detach(),
            value,
            what=f"the new head's '{name}'",
            hint="model.linear2 = nn.Linear(model.linear2.in_features, num_classes), once.",
        )


@pytest.mark.points(3)
def test_finetune_matches_the_fixture(part: ModuleType, expected: dict[str, Any]) -> None:
    """finetune: the losses of 2 epochs of odd or even on 300 digits, features unchanged"""
    pretrained = torch.load(PRETRAINED_FILE, weights_only=True)
    # The net as prepare_finetuning leaves it: the features frozen, the fixture's new head.
    model = two_layer_net(48)
    model.linear2 = nn.Linear(48, 2)
    head = {f"linear2.{name}": value for name, value in expected["head"].items()}
    model.load_state_dict({**pretrained, **head})
    model.linear1.requires_grad_(False)
    digits = load_digits(300)
    torch.manual_seed(4032)
    losses = part.finetune(
        model, digits["train_x"], digits["train_y"] % 2, epochs=2, batch_size=50, learning_rate=0.1
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of finetune",
        dtype=torch.float32,
        hint="SGD(model.linear2.parameters(), lr, momentum=0.9), as train_model trains.",
    )
    for name in FEATURES:
        assert torch.equal(model.get_parameter(name).detach(), pretrained[name]), (
            f"'{name}' changed during fine-tuning: the optimizer must hold only the head."
        )
