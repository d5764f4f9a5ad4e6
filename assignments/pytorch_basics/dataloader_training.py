"""Part 5: minibatch training with a DataLoader, and evaluation.

Lecture idea: a `torch.utils.data.DataLoader` cuts a dataset into minibatches (and can
shuffle it every epoch), so the training loop only asks for "the next batch".
`TensorDataset(x, y)` turns two tensors with the same first dimension into a dataset
whose i-th sample is `(x[i], y[i])`.

Evaluation is different from training: put the model in eval mode (`model.eval()`,
which matters for layers such as dropout and batch norm) and do not build a graph
(`torch.no_grad()` or `torch.inference_mode()`), because nothing will be
backpropagated.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader


def make_loader(
    x: torch.Tensor, y: torch.Tensor, batch_size: int = 8, shuffle: bool = False
) -> DataLoader[tuple[torch.Tensor, ...]]:
    """Return a `DataLoader` over `TensorDataset(x, y)` with this batch size and shuffling.

    Each batch is a pair `(x_batch, y_batch)`; the last batch is smaller when `len(x)` is
    not a multiple of `batch_size` (keep it: do not drop it).
    """
    raise NotImplementedError("make_loader: not implemented yet (see its docstring)")


def train_with_loader(
    model: nn.Module,
    loader: DataLoader[tuple[torch.Tensor, ...]],
    optimizer: torch.optim.Optimizer,
    epochs: int = 10,
) -> list[float]:
    """Train `model` for `epochs` passes over `loader`; return one loss per batch.

    Call `model.train()` first. Then for each epoch, for each `(x_batch, y_batch)`:
    `loss = torch.nn.functional.mse_loss(model(x_batch), y_batch)`, record
    `loss.item()`, `optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`.
    Use the optimizer you are given; do not create a new one.

    Returns a list of `epochs * len(loader)` floats.
    """
    raise NotImplementedError("train_with_loader: not implemented yet (see its docstring)")


def evaluate(model: nn.Module, loader: DataLoader[tuple[torch.Tensor, ...]]) -> float:
    """Return the mean squared error over every element of every sample in `loader`.

    That is (sum of all squared errors) / (total number of elements of all the y
    batches), as a Python float. Compute it with the model in eval mode and without
    building a graph.

    Usual mistake: averaging the per-batch means. When the last batch is smaller, its
    mean would count as much as a full batch's; sum the squared errors instead
    (`mse_loss(..., reduction="sum")`) and divide once at the end.
    """
    raise NotImplementedError("evaluate: not implemented yet (see its docstring)")
