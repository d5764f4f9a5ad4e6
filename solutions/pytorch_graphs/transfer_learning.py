"""Part 4: transfer learning: reuse a pretrained model's features, train a new head.

Lecture idea: with little data, start from a model pretrained on a big dataset, keep
its feature extractor (the backbone) frozen, replace its last layer (the head) with a
new one for your classes, and train only that. In practice the pretrained model comes
from a model zoo (for example torchvision's ResNet, whose head is `model.fc`); here the
tests build a small "pretrained" model locally (nothing is downloaded) with the same
shape of API:

    model.backbone   an nn.Module mapping x (N, D_in) to features (N, feature_dim);
                     it contains BatchNorm, whose running statistics are pretrained too
    model.head       an nn.Linear(feature_dim, old_classes)
    model(x)         model.head(model.backbone(x))

Every function works in float32 and float64 and on any device.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn


def replace_head(model: nn.Module, num_classes: int) -> nn.Module:
    """Freeze the backbone and give `model` a new head for `num_classes` classes; return it.

      - every parameter of `model.backbone` gets `requires_grad_(False)`;
      - `model.head = nn.Linear(model.head.in_features, num_classes, ...)`, created on the
        old head's device and with its dtype (`device=..., dtype=...`), freshly
        initialised and trainable;
      - the backbone's weights stay exactly as they are.

    Modify `model` in place and return it.
    """
    # BEGIN SOLUTION
    for parameter in model.backbone.parameters():
        parameter.requires_grad_(False)
    old_head = model.head
    # The new head lives where the old one did: same device and dtype as the backbone.
    model.head = nn.Linear(
        old_head.in_features,
        num_classes,
        device=old_head.weight.device,
        dtype=old_head.weight.dtype,
    )
    return model
    # END SOLUTION


def head_optimizer(model: nn.Module, learning_rate: float) -> torch.optim.Optimizer:
    """`torch.optim.SGD(model.head.parameters(), lr=learning_rate, momentum=0.9)`.

    Only the head's parameters: the optimizer must not hold the backbone's, so that
    nothing (not even weight decay) can change the pretrained weights.
    """
    # BEGIN SOLUTION
    return torch.optim.SGD(model.head.parameters(), lr=learning_rate, momentum=0.9)
    # END SOLUTION


def train_head(
    model: nn.Module,
    x: torch.Tensor,
    labels: torch.Tensor,
    learning_rate: float = 1e-2,
    steps: int = 100,
) -> list[float]:
    """Train the head of `model` (backbone frozen, new head in place) on (x, labels).

    labels are class indices (N,) of dtype int64. Create the optimizer with
    `head_optimizer(model, learning_rate)`. Put `model.backbone` in eval mode (its
    BatchNorm then uses, and keeps, its pretrained statistics) and `model.head` in train
    mode. Each step: `loss = F.cross_entropy(model(x), labels)`, record `loss.item()`,
    `optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`.

    Returns the list of `steps` losses.

    Usual mistake: `model.train()`, which puts the backbone's BatchNorm in training mode:
    it normalises with each batch's statistics and overwrites the pretrained running
    statistics, although no weight has requires_grad.
    """
    # BEGIN SOLUTION
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
    # END SOLUTION
