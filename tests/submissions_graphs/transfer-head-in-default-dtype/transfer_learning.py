"""Part 4 (reference): reuse a pretrained backbone, train a new head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def replace_head(model: nn.Module, num_classes: int) -> nn.Module:
    """Freeze model.backbone and give model a new head for `num_classes` classes."""
    for parameter in model.backbone.parameters():
        parameter.requires_grad_(False)
    old_head = model.head
    # The new head lives where the old one did: same device and dtype as the backbone.
    model.head = nn.Linear(old_head.in_features, num_classes)
    return model


def head_optimizer(model: nn.Module, learning_rate: float) -> torch.optim.Optimizer:
    """SGD with momentum 0.9 over the head's parameters only."""
    return torch.optim.SGD(model.head.parameters(), lr=learning_rate, momentum=0.9)


def train_head(
    model: nn.Module,
    x: torch.Tensor,
    labels: torch.Tensor,
    learning_rate: float = 1e-2,
    steps: int = 100,
) -> list[float]:
    """Train only the head with cross-entropy; the backbone stays frozen and in eval mode."""
    optimizer = head_optimizer(model, learning_rate)
    # eval() keeps the backbone's BatchNorm statistics (and any dropout) as pretrained;
    # requires_grad=False alone does not stop BatchNorm from updating its running means.
    model.backbone.eval()
    model.head.train()
    losses: list[float] = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), labels)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses
