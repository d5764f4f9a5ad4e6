"""Reference of part `tensorboard_logging`: log a training run with SummaryWriter."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


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
                writer.add_scalar("loss", loss.item(), len(losses))
                losses.append(loss.item())
            model.eval()
            with torch.no_grad():
                accuracy = (model(val_x).argmax(dim=1) == val_y).float().mean().item()
            writer.add_scalar("val/accuracy", accuracy, epoch)
            accuracies.append(accuracy)
    return {"losses": losses, "val_accuracy": accuracies}
