"""Part 3: saving and loading models, and resuming training from a checkpoint.

Lecture idea: `model.state_dict()` is an ordered dict of the model's tensors (its
parameters and buffers), by name; `model.load_state_dict(state)` copies them back into a
model of the same architecture. Save state_dicts, not whole model objects: a state_dict
is only tensors and plain values, which `torch.load(path, weights_only=True)` reads
without running any code from the file (unpickling arbitrary objects can run arbitrary
code, so never load an untrusted file without `weights_only=True`).

To resume training exactly, the model's weights are not enough: the optimizer has state
of its own (SGD's momentum buffers, Adam's moment estimates and step count), so a
checkpoint holds the optimizer's state_dict too, plus where training stopped.

`path` is a `str` or a `pathlib.Path`. Load tensors onto the model's device
(`map_location=next(model.parameters()).device`), so a checkpoint written on a GPU loads
on a CPU-only machine.

The training step used throughout (the "contract step"), on a model, an optimizer and
data x, y: `loss = F.mse_loss(model(x), y)`, record `loss.item()`,
`optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`.
"""

from __future__ import annotations

import os
from typing import Any  # SOLUTION

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn

PathLike = str | os.PathLike[str]


def _device_of(model: nn.Module) -> torch.device:  # SOLUTION
    return next(model.parameters()).device


def save_weights(model: nn.Module, path: PathLike) -> None:
    """Save `model.state_dict()` to `path` with torch.save (the state_dict, not the model)."""
    # BEGIN SOLUTION
    torch.save(model.state_dict(), path)
    # END SOLUTION


def load_weights(model: nn.Module, path: PathLike) -> nn.Module:
    """Load a state_dict saved by save_weights into `model`; return `model`.

    Read the file with `torch.load(path, map_location=..., weights_only=True)`: a file
    holding anything but tensors and plain containers must raise, leaving `model` as it
    was, and no code inside the file may run.
    """
    # BEGIN SOLUTION
    # weights_only=True unpickles tensors and plain containers only: a checkpoint from
    # someone else cannot run code on this machine.
    state = torch.load(path, map_location=_device_of(model), weights_only=True)
    model.load_state_dict(state)
    return model
    # END SOLUTION


def save_checkpoint(
    path: PathLike,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    losses: list[float],
) -> None:
    """Save a training checkpoint to `path`: a dict with exactly the keys

        "model":     model.state_dict()
        "optimizer": optimizer.state_dict()
        "step":      step (an int: how many training steps are done)
        "losses":    losses (a list of floats, one per step done)

    The file must load with `torch.load(path, weights_only=True)`.
    """
    # BEGIN SOLUTION
    checkpoint: dict[str, Any] = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "losses": list(losses),
    }
    torch.save(checkpoint, path)
    # END SOLUTION


def load_checkpoint(
    path: PathLike, model: nn.Module, optimizer: torch.optim.Optimizer
) -> tuple[int, list[float]]:
    """Restore a checkpoint written by save_checkpoint; return `(step, losses)`.

    Load the file with `weights_only=True`, then `model.load_state_dict(...)` and
    `optimizer.load_state_dict(...)`: `model` and `optimizer` are freshly built (the same
    architecture, an optimizer over `model.parameters()` of the same kind and settings).
    """
    # BEGIN SOLUTION
    checkpoint = torch.load(path, map_location=_device_of(model), weights_only=True)
    model.load_state_dict(checkpoint["model"])
    # The optimizer's state (momentum buffers, Adam's moment estimates, its step count) is
    # part of training: without it the next steps differ from an uninterrupted run.
    optimizer.load_state_dict(checkpoint["optimizer"])
    return int(checkpoint["step"]), [float(loss) for loss in checkpoint["losses"]]
    # END SOLUTION


def resume_training(
    path: PathLike,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    total_steps: int,
) -> list[float]:
    """Resume an interrupted training run from the checkpoint at `path`.

    Load it with load_checkpoint into the fresh `model` and `optimizer`, then run the
    contract step from the saved step up to `total_steps` (so `total_steps - step` more
    steps). Return all `total_steps` losses: the checkpoint's, then the new ones. The
    losses and final weights must equal those of one run that was never interrupted.

    Usual mistakes: not restoring the optimizer's state (Adam restarts from zero moment
    estimates, so the losses drift from the uninterrupted run), starting the step count
    from 0 again, or returning only the new losses.
    """
    # BEGIN SOLUTION
    step, losses = load_checkpoint(path, model, optimizer)
    model.train()
    for _ in range(step, total_steps):
        loss = F.mse_loss(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses
    # END SOLUTION
