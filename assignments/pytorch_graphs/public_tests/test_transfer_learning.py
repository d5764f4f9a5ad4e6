"""Public tests of part 4, transfer_learning: a frozen backbone and a new trained head."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import PretrainedNet, state_of

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "transfer_learning"


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """A PretrainedNet seeded with 2004, the reference's new head and its 10 training steps."""
    d_in, h, feature_dim, old_classes, num_classes, n = 8, 10, 6, 5, 3, 12
    generator = torch.Generator().manual_seed(2004)
    fixture: dict[str, Any] = {
        "seed": 2004,
        "dims": [d_in, h, feature_dim, old_classes],
        "num_classes": num_classes,
        "x": torch.randn(n, d_in, generator=generator, dtype=torch.float64),
        "labels": torch.randint(num_classes, (n,), generator=generator),
        "learning_rate": 0.1,
        "steps": 10,
    }
    torch.manual_seed(2004)
    model = PretrainedNet(d_in, h, feature_dim, old_classes).to(torch.float64)
    # Pretrained BatchNorm statistics: not the defaults, so that losing them shows.
    with torch.no_grad():
        model.backbone.norm.running_mean.copy_(0.3 * torch.randn(h, generator=generator))
        model.backbone.norm.running_var.copy_(0.5 + torch.rand(h, generator=generator))
    fixture["pretrained_state"] = state_of(model)
    reference.replace_head(model, num_classes)
    fixture["head_state"] = state_of(model.head)
    fixture["losses"] = reference.train_head(
        model,
        fixture["x"],
        fixture["labels"],
        learning_rate=fixture["learning_rate"],
        steps=fixture["steps"],
    )
    fixture["head_state_trained"] = state_of(model.head)
    return fixture


@pytest.fixture
def pretrained(make_pretrained: Callable[..., torch.nn.Module], expected: dict[str, Any]) -> Any:
    model = make_pretrained(*expected["dims"])
    model.load_state_dict(expected["pretrained_state"])
    return model


@pytest.mark.points(3)
def test_replace_head_freezes_the_backbone(
    part: ModuleType, pretrained: Any, expected: dict[str, Any]
) -> None:
    """replace_head freezes the backbone and adds a trainable nn.Linear head"""
    old_head = pretrained.head
    model = part.replace_head(pretrained, expected["num_classes"])
    assert model is pretrained, "replace_head returns the model it was given"
    assert isinstance(model.head, torch.nn.Linear) and model.head is not old_head
    assert model.head.weight.shape == (expected["num_classes"], expected["dims"][2])
    assert model.head.weight.dtype == torch.float64, "create the head with the old head's dtype"
    assert all(not p.requires_grad for p in model.backbone.parameters()), "freeze the backbone"
    assert all(p.requires_grad for p in model.head.parameters()), "the new head must train"


@pytest.mark.points(2)
def test_head_optimizer_holds_only_the_head(
    part: ModuleType, pretrained: Any, expected: dict[str, Any]
) -> None:
    """head_optimizer is an SGD with momentum 0.9 over the head's parameters only"""
    pretrained.head = torch.nn.Linear(expected["dims"][2], 3).to(torch.float64)
    optimizer = part.head_optimizer(pretrained, 0.05)
    assert isinstance(optimizer, torch.optim.SGD)
    held = [p for group in optimizer.param_groups for p in group["params"]]
    assert {id(p) for p in held} == {id(p) for p in pretrained.head.parameters()}
    assert len(held) == 2
    assert optimizer.param_groups[0]["lr"] == 0.05
    assert optimizer.param_groups[0]["momentum"] == 0.9


def model_with_expected_head(pretrained: Any, expected: dict[str, Any]) -> Any:
    for parameter in pretrained.backbone.parameters():
        parameter.requires_grad_(False)
    pretrained.head = torch.nn.Linear(expected["dims"][2], expected["num_classes"])
    pretrained.head.to(torch.float64).load_state_dict(expected["head_state"])
    return pretrained


@pytest.mark.points(4)
def test_train_head_matches_expected(
    part: ModuleType, pretrained: Any, expected: dict[str, Any]
) -> None:
    """train_head's losses and trained head match the expected values"""
    model = model_with_expected_head(pretrained, expected)
    losses = part.train_head(
        model,
        expected["x"],
        expected["labels"],
        learning_rate=expected["learning_rate"],
        steps=expected["steps"],
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of train_head",
        hint="backbone in eval mode, head in train mode, cross_entropy, head_optimizer",
    )
    for key, want in expected["head_state_trained"].items():
        assert_tensor_close(model.head.state_dict()[key], want, what=f"head.{key}")


@pytest.mark.points(2)
def test_train_head_keeps_the_pretrained_backbone(
    part: ModuleType, pretrained: Any, expected: dict[str, Any]
) -> None:
    """train_head changes no backbone weight and no BatchNorm statistic"""
    model = model_with_expected_head(pretrained, expected)
    before = {k: v.clone() for k, v in model.backbone.state_dict().items()}
    model.train()
    part.train_head(model, expected["x"], expected["labels"], learning_rate=0.1, steps=3)
    changed = [k for k, v in model.backbone.state_dict().items() if not torch.equal(v, before[k])]
    assert not changed, f"train_head changed the backbone's {changed}: use model.backbone.eval()"
