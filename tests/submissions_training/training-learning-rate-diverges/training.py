"""Reference of part `training`: the two-layer net trained with torch.optim and a DataLoader."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_model(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
) -> list[float]:
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=0)
    # Scales the learning rate with the batch size: a step 50 times too large overshoots.
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate * batch_size, momentum=0.9)
    model.train()
    losses = []
    for _ in range(epochs):
        for inputs, labels in loader:
            loss = F.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model(x).argmax(dim=1)
