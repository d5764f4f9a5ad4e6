"""A weak model of part `training`, for `validate`'s check that the low threshold bites.

The reference with a learning rate a hundred times too small: it trains and learns, too
slowly to be of use (0.17 to 0.31 held-out accuracy over seeds), and must earn nothing from
the held-out accuracy test. `validate` grades it with the reference's other files on each of
its seeds (docs/writing-hidden-tests.md, "Metrics").
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# How much smaller the step is than the one the assignment asks for.
SLOWER = 100


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
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate / SLOWER, momentum=0.9)
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
