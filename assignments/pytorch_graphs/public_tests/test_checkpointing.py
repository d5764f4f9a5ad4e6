"""Public tests of part 3, checkpointing: state_dicts, checkpoints and resuming training."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import nn

from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "checkpointing"
NetFactory = Callable[[int, int, int], nn.Sequential]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@pytest.fixture
def expected(load_fixture: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return load_fixture(PART_ID)


@pytest.mark.points(3)
def test_weights_round_trip(
    part: ModuleType, make_regression_net: NetFactory, tmp_path: Path
) -> None:
    """save_weights then load_weights copies every tensor into another model"""
    torch.manual_seed(2051)
    source, target = make_regression_net(6, 5, 2), make_regression_net(6, 5, 2)
    path = tmp_path / "weights.pt"
    part.save_weights(source, path)
    saved = torch.load(path, weights_only=True)
    assert sorted(saved) == sorted(source.state_dict()), "save the model's state_dict()"
    assert part.load_weights(target, path) is target, "load_weights returns the model"
    for key, value in source.state_dict().items():
        assert_tensor_close(target.state_dict()[key], value, what=f"{key} after load_weights")


class _RunsCode:
    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, ("raise SystemExit('load_weights ran code from the file')",))


@pytest.mark.points(2)
def test_load_weights_refuses_files_that_run_code(
    part: ModuleType, make_regression_net: NetFactory, tmp_path: Path
) -> None:
    """load_weights raises on a file holding more than tensors (weights_only=True)"""
    model = make_regression_net(6, 5, 2)
    path = tmp_path / "untrusted.pt"
    torch.save({**model.state_dict(), "payload": _RunsCode()}, path)
    with pytest.raises(pickle.UnpicklingError):
        part.load_weights(model, path)


@pytest.mark.points(3)
def test_checkpoint_holds_what_resuming_needs(
    part: ModuleType, make_regression_net: NetFactory, tmp_path: Path
) -> None:
    """save_checkpoint writes model, optimizer, step and losses, readable with weights_only"""
    model = make_regression_net(6, 5, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    path = tmp_path / "checkpoint.pt"
    part.save_checkpoint(path, model, optimizer, 1, [0.5])
    checkpoint = torch.load(path, weights_only=True)
    assert sorted(checkpoint) == ["losses", "model", "optimizer", "step"]
    assert checkpoint["step"] == 1 and checkpoint["losses"] == [0.5]
    assert sorted(checkpoint["model"]) == sorted(model.state_dict())
    exp_avg = checkpoint["optimizer"]["state"][0]["exp_avg"]
    assert_tensor_close(exp_avg, optimizer.state_dict()["state"][0]["exp_avg"], what="exp_avg")


@pytest.mark.points(4)
def test_resume_matches_the_expected_uninterrupted_run(
    part: ModuleType,
    expected: dict[str, Any],
    make_regression_net: NetFactory,
    tmp_path: Path,
) -> None:
    """resume_training after a checkpoint reproduces the losses of an uninterrupted run"""
    model = make_regression_net(*expected["dims"])
    model.load_state_dict(expected["state"])
    optimizer = torch.optim.Adam(model.parameters(), lr=expected["learning_rate"])
    x, y = expected["x"], expected["y"]
    losses = []
    for _ in range(expected["stop_at"]):
        loss = nn.functional.mse_loss(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    path = tmp_path / "checkpoint.pt"
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save({**state, "step": expected["stop_at"], "losses": losses}, path)

    fresh = make_regression_net(*expected["dims"])
    fresh_optimizer = torch.optim.Adam(fresh.parameters(), lr=expected["learning_rate"])
    resumed = part.resume_training(path, fresh, fresh_optimizer, x, y, expected["total_steps"])
    assert_losses_close(
        resumed,
        expected["losses"],
        what="losses of resume_training",
        hint="restore the optimizer's state too, and continue from the saved step",
    )
    for key, want in expected["state_trained"].items():
        assert_tensor_close(fresh.state_dict()[key], want, what=f"{key} after resuming")
