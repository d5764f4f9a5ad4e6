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
import torch.nn.functional as F  # SOLUTION
from torch import nn
from torch.utils.data import DataLoader


def make_loader(
    x: torch.Tensor, y: torch.Tensor, batch_size: int = 8, shuffle: bool = False
) -> DataLoader[tuple[torch.Tensor, ...]]:
    """Return a `DataLoader` over `TensorDataset(x, y)` with this batch size and shuffling.

    Each batch is a pair `(x_batch, y_batch)`; the last batch is smaller when `len(x)` is
    not a multiple of `batch_size` (keep it: do not drop it).
    """
    # BEGIN SOLUTION
    return DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)
    # END SOLUTION


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
    # BEGIN SOLUTION
    # Layers such as dropout and batch norm behave differently in training mode; a
    # model may arrive here in eval mode (for example after evaluate()).
    model.train()
    losses: list[float] = []
    for _ in range(epochs):
        for x_batch, y_batch in loader:
            loss = F.mse_loss(model(x_batch), y_batch)
            losses.append(loss.item())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return losses
    # END SOLUTION


def evaluate(model: nn.Module, loader: DataLoader[tuple[torch.Tensor, ...]]) -> float:
    """Return the mean squared error over every element of every sample in `loader`.

    That is (sum of all squared errors) / (total number of elements of all the y
    batches), as a Python float. Compute it with the model in eval mode and without
    building a graph.

    Usual mistake: averaging the per-batch means. When the last batch is smaller, its
    mean would count as much as a full batch's; sum the squared errors instead
    (`mse_loss(..., reduction="sum")`) and divide once at the end.
    """
    # BEGIN SOLUTION
    model.eval()
    sum_of_squared_errors = 0.0
    element_count = 0
    # No graph is needed to measure the loss; no_grad saves the memory and time.
    with torch.no_grad():
        for x_batch, y_batch in loader:
            # Sum rather than average per batch: averaging the batch means would give
            # a smaller last batch the same weight as a full one.
            sum_of_squared_errors += F.mse_loss(model(x_batch), y_batch, reduction="sum").item()
            element_count += y_batch.numel()
    return sum_of_squared_errors / element_count
    # END SOLUTION
