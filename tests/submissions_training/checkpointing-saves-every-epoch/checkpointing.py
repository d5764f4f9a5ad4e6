"""Reference of part `checkpointing`: keep the best checkpoint and load it into a fresh model."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


def keep_best(model: nn.Module, accuracy: float, best_accuracy: float, path: str | Path) -> float:
    # Saves after every epoch, so the file ends up holding the last weights, not the best.
    torch.save(model.state_dict(), path)
    return max(accuracy, best_accuracy)


def load_model(path: str | Path, model: nn.Module) -> nn.Module:
    device = next(model.parameters()).device
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    model.eval()
    return model
