"""A weak model of part `finetuning`, for `validate`'s check that the low threshold bites.

The reference without its optimizer step: the new head keeps its random initial weights (0.49
held-out odd-or-even accuracy on average, at most 0.71 over 40 seeds), and must earn nothing
from the held-out accuracy test. `validate` grades it with the reference's other files on
each of its seeds (docs/writing-hidden-tests.md, "Metrics").
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def prepare_finetuning(model: nn.Module, path: str | Path, num_classes: int) -> nn.Module:
    device = next(model.parameters()).device
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    model.requires_grad_(False)
    model.linear2 = nn.Linear(model.linear2.in_features, num_classes).to(device)
    return model


def finetune(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
) -> list[float]:
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=0)
    model.train()
    losses = []
    for _ in range(epochs):
        for inputs, labels in loader:
            loss = F.cross_entropy(model(inputs), labels)
            losses.append(loss.item())
    return losses
