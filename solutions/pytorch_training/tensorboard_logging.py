"""Part `tensorboard_logging`: log a training run for TensorBoard with SummaryWriter.

Look at your runs with `tensorboard --logdir runs` (the walkthrough writes into runs/).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn
from torch.utils.data import DataLoader, TensorDataset  # SOLUTION
from torch.utils.tensorboard import SummaryWriter  # noqa: F401


def train_with_logging(
    model: nn.Module,
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    val_x: torch.Tensor,
    val_y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    log_dir: str,
) -> dict[str, list[float]]:
    """Train as `train_model` of part `training` does, logging into `log_dir`.

    Returns {"losses": [...one loss.item() per step...], "val_accuracy": [...one per epoch...]}.
    - Write with one SummaryWriter(log_dir), closed at the end (or used as `with ... as w`).
    - After each step, log its loss: add_scalar("train/loss", loss.item(), step), where step
      counts the optimizer steps from 0.
    - After each epoch, measure the validation accuracy (model.eval(), torch.no_grad(), the
      share of val_x whose argmax is the label in val_y, a float in [0, 1]), log it with
      add_scalar("val/accuracy", accuracy, epoch), epochs counted from 0, and set
      model.train() again before the next epoch's steps.
    Training is as in part `training`: one shuffled DataLoader (num_workers=0), SGD with
    momentum 0.9 and cross-entropy; draw no other random numbers.
    """
    # BEGIN SOLUTION: train, logging with SummaryWriter
    loader = DataLoader(
        TensorDataset(train_x, train_y), batch_size=batch_size, shuffle=True, num_workers=0
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    losses: list[float] = []
    accuracies: list[float] = []
    with SummaryWriter(log_dir) as writer:
        for epoch in range(epochs):
            model.train()
            for inputs, labels in loader:
                loss = F.cross_entropy(model(inputs), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                writer.add_scalar("train/loss", loss.item(), len(losses))
                losses.append(loss.item())
            model.eval()
            with torch.no_grad():
                accuracy = (model(val_x).argmax(dim=1) == val_y).float().mean().item()
            writer.add_scalar("val/accuracy", accuracy, epoch)
            accuracies.append(accuracy)
    return {"losses": losses, "val_accuracy": accuracies}
    # END SOLUTION
