"""Part 1 (reference): a dynamic graph that reuses one layer a random number of times."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn


class DynamicNet(nn.Module):
    """output_linear(relu(middle_linear(...relu(input_linear(x))...))), num_middle middles."""

    def __init__(self, D_in: int, H: int, D_out: int) -> None:
        super().__init__()
        self.input_linear = nn.Linear(D_in, H)
        self.middle_linear = nn.Linear(H, H)
        self.output_linear = nn.Linear(H, D_out)

    def forward(self, x: torch.Tensor, num_middle: int) -> torch.Tensor:
        h_relu = self.input_linear(x).clamp(min=0)
        # Ordinary Python control flow: autograd records whatever actually ran, so each call
        # builds a graph of its own depth, and every use of middle_linear adds to its .grad.
        for _ in range(num_middle):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        result: torch.Tensor = self.output_linear(h_relu)
        return result


def sample_num_middle(rng: random.Random) -> int:
    """How many times the middle layer runs: rng.randint(0, 3), one draw."""
    return random.randint(0, 3)


def train_dynamic_net(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    rng: random.Random,
    learning_rate: float = 1e-4,
    steps: int = 500,
) -> list[float]:
    """SGD with momentum 0.9 on the summed squared error; one depth drawn per step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    losses: list[float] = []
    for _ in range(steps):
        y_pred = model(x, sample_num_middle(rng))
        loss = F.mse_loss(y_pred, y, reduction="sum")
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses
