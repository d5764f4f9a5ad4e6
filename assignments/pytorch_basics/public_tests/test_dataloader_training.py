"""Public tests of part 5, dataloader_training: minibatches, training loops and evaluation."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import state_of, two_layer_sequential
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_scalar_close, assert_tensor_close

PART_ID = "dataloader_training"
D_IN, H, D_OUT = 20, 10, 3  # the sizes the fixture was made with
SequentialNet = Callable[[int, int, int], nn.Sequential]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """A model seeded with 1005 and the reference's 3 epochs and evaluation on 10 samples."""
    # 10 samples in batches of 4: the last batch holds only 2, which is what makes
    # evaluate()'s averaging matter.
    generator = torch.Generator().manual_seed(1005)
    fixture: dict[str, Any] = {
        "seed": 1005,
        "x": torch.randn(10, D_IN, generator=generator, dtype=torch.float64),
        "y": torch.randn(10, D_OUT, generator=generator, dtype=torch.float64),
        "batch_size": 4,
        "epochs": 3,
        "learning_rate": 5e-2,
    }
    torch.manual_seed(1005)
    model = two_layer_sequential(D_IN, H, D_OUT).to(torch.float64)
    fixture["model_state"] = state_of(model)
    loader = DataLoader(TensorDataset(fixture["x"], fixture["y"]), batch_size=4, shuffle=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=fixture["learning_rate"])
    fixture["losses"] = reference.train_with_loader(model, loader, optimizer, epochs=3)
    fixture["model_state_trained"] = state_of(model)
    fixture["mse_trained"] = reference.evaluate(model, loader)
    return fixture


@pytest.fixture
def fixture_model(expected: dict[str, Any], make_sequential_net: SequentialNet) -> nn.Sequential:
    """The fixture's model with its initial weights, in float64."""
    model = make_sequential_net(D_IN, H, D_OUT).to(torch.float64)
    model.load_state_dict(expected["model_state"])
    return model


def fixture_loader(expected: dict[str, Any]) -> DataLoader[tuple[torch.Tensor, ...]]:
    # Built with torch itself, not make_loader, so these tests do not depend on it.
    dataset = TensorDataset(expected["x"], expected["y"])
    return DataLoader(dataset, batch_size=expected["batch_size"], shuffle=False)


def record_forward_calls(model: nn.Module) -> list[tuple[bool, bool]]:
    """Return a list that fills with (model.training, grad enabled) at each forward call."""
    calls: list[tuple[bool, bool]] = []

    def record(module: nn.Module, inputs: tuple[Any, ...]) -> None:
        calls.append((module.training, torch.is_grad_enabled()))

    model.register_forward_pre_hook(record)
    return calls


@pytest.mark.points(3)
def test_make_loader_batches_in_order(part: ModuleType) -> None:
    """make_loader yields (x, y) batches of batch_size, in order, keeping the short last one"""
    x = torch.arange(30.0).reshape(10, 3)
    y = -torch.arange(10.0).reshape(10, 1)
    loader = part.make_loader(x, y, batch_size=4)
    assert isinstance(loader, DataLoader), f"make_loader returned {type(loader).__name__}."
    batches = list(loader)
    sizes = [len(x_batch) for x_batch, _ in batches]
    assert sizes == [4, 4, 2], f"batch sizes {sizes}, expected [4, 4, 2] (keep the last batch)."
    assert_tensor_close(torch.cat([b[0] for b in batches]), x, what="the x batches, concatenated")
    assert_tensor_close(torch.cat([b[1] for b in batches]), y, what="the y batches, concatenated")


@pytest.mark.points(2)
def test_make_loader_shuffles_when_asked(part: ModuleType) -> None:
    """make_loader(shuffle=True) visits every sample once, in a new order"""
    x = torch.arange(64.0).reshape(32, 2)
    y = torch.arange(32.0)
    torch.manual_seed(1500)
    batches = list(part.make_loader(x, y, batch_size=5, shuffle=True))
    x_seen = torch.cat([x_batch for x_batch, _ in batches])
    y_seen = torch.cat([y_batch for _, y_batch in batches])
    assert sorted(y_seen.tolist()) == y.tolist(), "each sample must appear exactly once."
    assert_tensor_close(x_seen, x[y_seen.long()], what="x rows paired with their y")
    assert not torch.equal(y_seen, y), "shuffle=True kept the original order."


@pytest.mark.points(4)
def test_train_with_loader_matches_expected(
    part: ModuleType, expected: dict[str, Any], fixture_model: nn.Sequential
) -> None:
    """train_with_loader's per-batch losses and trained weights match the expected values"""
    optimizer = torch.optim.SGD(fixture_model.parameters(), lr=expected["learning_rate"])
    losses = part.train_with_loader(
        fixture_model, fixture_loader(expected), optimizer, epochs=expected["epochs"]
    )
    assert_losses_close(
        losses,
        expected["losses"],
        what="losses of train_with_loader",
        hint="One mse_loss(model(x_batch), y_batch).item() per batch, before optimizer.step().",
    )
    for key, want in expected["model_state_trained"].items():
        assert_tensor_close(fixture_model.state_dict()[key], want, what=f"{key} after training")


@pytest.mark.points(2)
def test_train_with_loader_trains_in_train_mode(
    part: ModuleType, expected: dict[str, Any], fixture_model: nn.Sequential
) -> None:
    """train_with_loader switches the model to train mode and runs every batch of every epoch"""
    fixture_model.eval()
    calls = record_forward_calls(fixture_model)
    optimizer = torch.optim.SGD(fixture_model.parameters(), lr=1e-3)
    losses = part.train_with_loader(fixture_model, fixture_loader(expected), optimizer, epochs=2)
    assert len(losses) == 2 * 3, f"{len(losses)} losses, expected epochs * len(loader) = 6."
    assert len(calls) == 6, f"the model ran {len(calls)} times, expected 6 (one per batch)."
    assert all(training for training, _ in calls), (
        "the model ran in eval mode: call model.train() before training."
    )


@pytest.mark.points(2)
def test_evaluate_matches_expected(
    part: ModuleType, expected: dict[str, Any], fixture_model: nn.Sequential
) -> None:
    """evaluate returns the mean squared error over all elements, short last batch included"""
    fixture_model.load_state_dict(expected["model_state_trained"])
    mse = part.evaluate(fixture_model, fixture_loader(expected))
    assert_scalar_close(
        mse,
        expected["mse_trained"],
        what="evaluate",
        hint="Sum the squared errors over all batches and divide once by the element count; "
        "averaging per-batch means over-weights the short last batch.",
        rel_tol=1e-9,
    )


@pytest.mark.points(2)
def test_evaluate_uses_eval_mode_without_graph(
    part: ModuleType, expected: dict[str, Any], fixture_model: nn.Sequential
) -> None:
    """evaluate runs the model in eval mode, without building a graph or changing weights"""
    calls = record_forward_calls(fixture_model)
    state_before = {key: value.clone() for key, value in fixture_model.state_dict().items()}
    mse = part.evaluate(fixture_model, fixture_loader(expected))
    assert type(mse) is float, f"evaluate must return a Python float, got {type(mse).__name__}."
    assert calls, "evaluate never called the model."
    assert not any(training for training, _ in calls), "call model.eval() before evaluating."
    assert not any(grad_enabled for _, grad_enabled in calls), (
        "evaluate built a graph: wrap it in torch.no_grad() (or torch.inference_mode())."
    )
    for key, value in fixture_model.state_dict().items():
        assert torch.equal(value, state_before[key]), f"evaluate changed {key}."
