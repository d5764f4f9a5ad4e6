"""Part 4 (reference): the network as nn.Module subclasses, trained with torch.optim."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TwoLayerNet(nn.Module):
    """linear2(relu(linear1(x)))."""

    def __init__(self, D_in: int, H: int, D_out: int) -> None:
        # nn.Module.__init__ sets up the bookkeeping that makes assigned submodules
        # show up in parameters() and state_dict(); it must run first.
        super().__init__()
        self.linear1 = nn.Linear(D_in, H)
        self.linear2 = nn.Linear(H, D_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result: torch.Tensor = self.linear2(torch.relu(self.linear1(x)))
        return result


class ParallelBlock(nn.Module):
    """(linear1(x) * linear2(x)).clamp(min=0): two branches multiplied elementwise."""

    def __init__(self, D_in: int, D_out: int) -> None:
        super().__init__()
        self.linear1 = nn.Linear(D_in, D_out)
        self.linear2 = nn.Linear(D_in, D_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.linear1(x) * self.linear2(x)).clamp(min=0)


def train_two_layer_net(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    learning_rate: float = 1e-4,
    steps: int = 500,
) -> list[float]:
    """Train `model` on (x, y) with SGD and mean squared error; return the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    losses: list[float] = []
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        losses.append(loss.item())
        # The optimizer does not clear gradients by itself.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses
