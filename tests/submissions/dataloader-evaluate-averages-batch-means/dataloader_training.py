"""Part 5 (reference): minibatch training with a DataLoader, and evaluation."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_loader(
    x: torch.Tensor, y: torch.Tensor, batch_size: int = 8, shuffle: bool = False
) -> DataLoader[tuple[torch.Tensor, ...]]:
    """Return a DataLoader over TensorDataset(x, y)."""
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)


def train_with_loader(
    model: nn.Module,
    loader: DataLoader[tuple[torch.Tensor, ...]],
    optimizer: torch.optim.Optimizer,
    epochs: int = 10,
) -> list[float]:
    """Train for `epochs` passes over `loader`; return one loss per batch."""
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


def evaluate(model: nn.Module, loader: DataLoader[tuple[torch.Tensor, ...]]) -> float:
    """Return the mean squared error over every element of every sample in `loader`."""
    model.eval()
    batch_losses = []
    with torch.no_grad():
        for x_batch, y_batch in loader:
            batch_losses.append(F.mse_loss(model(x_batch), y_batch).item())
    return sum(batch_losses) / len(batch_losses)
