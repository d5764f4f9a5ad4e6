"""Part `finetuning`: start from a pretrained checkpoint, freeze its features, train a new head.

`pretrained.pt` (next to this file) holds the state_dict of the lecture's two-layer net
trained on all ten digits: linear1 (64 -> 48, the features) -> ReLU -> dropout ->
linear2 (48 -> 10, the head). The new task tells odd digits from even ones (2 classes,
label = digit % 2): keep the pretrained features as they are and train only a new head.

The tests build the model themselves (the same net, freshly initialised) and seed torch
with torch.manual_seed before calling you: the new head's initial weights, the
DataLoader's shuffle and dropout all draw from that seed. Draw no other random numbers.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: F401  (F.cross_entropy is the loss to use)
from torch import nn
from torch.utils.data import DataLoader, TensorDataset  # noqa: F401


def prepare_finetuning(model: nn.Module, path: str | Path, num_classes: int) -> nn.Module:
    """Load the pretrained weights into `model`, freeze them, and give it a new head.

    `model` has the pretrained net's architecture (model.linear1, model.linear2), on any
    device. In this order:
    - model.load_state_dict(torch.load(path, weights_only=True, map_location=<the model's
      device>)): weights_only refuses a file that would run code when loaded;
    - freeze every loaded parameter: requires_grad_(False) (the features never change);
    - model.linear2 = nn.Linear(model.linear2.in_features, num_classes).to(<the model's
      device>): a fresh head, trainable (created on the CPU, then moved, so that its
      initial weights draw from torch's seeded CPU generator on every device).
    Return `model`.
    """
    # BEGIN SOLUTION: load, freeze, then replace model.linear2
    device = next(model.parameters()).device
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    model.requires_grad_(False)
    model.linear2 = nn.Linear(model.linear2.in_features, num_classes).to(device)
    return model
    # END SOLUTION


def finetune(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
) -> list[float]:
    """Train the new head of a prepared `model` on (x, y); return every step's loss.

    x is (N, 64) float32 pixels in [0, 1], y is (N,) int64 labels of the new task (0 or 1
    for odd or even), on any device. As in train_model, except for what the optimizer holds:
    - one DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True,
      num_workers=0), iterated once per epoch;
    - torch.optim.SGD(model.linear2.parameters(), lr=learning_rate, momentum=0.9): the
      optimizer holds only the head;
    - model.train() before training;
    - per batch: loss = F.cross_entropy(model(inputs), labels); optimizer.zero_grad();
      loss.backward(); optimizer.step(); append loss.item().
    Usual mistake: an optimizer over model.parameters() with features that still require
    grad: the pretrained features then change, and what they learned is lost.
    """
    # BEGIN SOLUTION: train only model.linear2, as train_model trains
    # Never trains: the features stay as loaded, so only finetune's own test can tell.
    return []
    # END SOLUTION
