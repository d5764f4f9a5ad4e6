"""Part `checkpointing`: keep the best model's weights during training, and load them back."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


def keep_best(model: nn.Module, accuracy: float, best_accuracy: float, path: str | Path) -> float:
    """Called after each epoch: save the model's weights when they are the best so far.

    When accuracy > best_accuracy, save model.state_dict() to `path` with torch.save
    (replacing what was there) and return accuracy; otherwise leave the file alone and
    return best_accuracy. The first call gets best_accuracy = float("-inf").
    Save the state_dict, never the model object: a state_dict loads with weights_only=True.
    """
    if accuracy > best_accuracy:
        torch.save(model, path)
        return accuracy
    return best_accuracy


def load_model(path: str | Path, model: nn.Module) -> nn.Module:
    """Load the state_dict saved at `path` into `model` (freshly built, same architecture)
    and return `model`, ready to predict: in eval mode.

    Read the file with torch.load(path, weights_only=True, map_location=<the model's
    device>): weights_only refuses a file that would run code when loaded.
    """
    device = next(model.parameters()).device
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    model.eval()
    return model
