"""Public tests of part 3, checkpointing: state_dicts, checkpoints and resuming training."""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import regression_net, state_of
from torch import nn

from grader.student.fixtures import public_fixture
from grader.testing import assert_losses_close, assert_tensor_close

PART_ID = "checkpointing"
NetFactory = Callable[[int, int, int], nn.Sequential]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """An Adam run of 10 steps, checkpointed at step 4 and resumed by the reference."""
    d_in, h, d_out, n = 9, 7, 2, 10
    generator = torch.Generator().manual_seed(2003)
    fixture: dict[str, Any] = {
        "seed": 2003,
        "dims": [d_in, h, d_out],
        "x": torch.randn(n, d_in, generator=generator, dtype=torch.float64),
        "y": torch.randn(n, d_out, generator=generator, dtype=torch.float64),
        "learning_rate": 0.01,
        "stop_at": 4,
        "total_steps": 10,
    }
    torch.manual_seed(2003)
    model = regression_net(d_in, h, d_out)
    fixture["state"] = state_of(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=fixture["learning_rate"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.pt"
        # Train the first part, save, and resume into a fresh model and optimizer.
        start = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save({**start, "step": 0, "losses": []}, path)
        losses = reference.resume_training(
            path, model, optimizer, fixture["x"], fixture["y"], fixture["stop_at"]
        )
        reference.save_checkpoint(path, model, optimizer, fixture["stop_at"], losses)
        torch.manual_seed(2004)
        resumed = regression_net(d_in, h, d_out)
        resumed_optimizer = torch.optim.Adam(resumed.parameters(), lr=fixture["learning_rate"])
        fixture["losses"] = reference.resume_training(
            path, resumed, resumed_optimizer, fixture["x"], fixture["y"], fixture["total_steps"]
        )
    fixture["state_trained"] = state_of(resumed)
    return fixture


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
