"""Part 4: the network as an nn.Module, trained with torch.optim.

Lecture idea: `nn.Module` bundles parameters with the computation that uses them.
Assigning an `nn.Linear` to `self.linear1` inside `__init__` registers it, so its
weight and bias appear in `model.parameters()` (what the optimizer updates) and in
`model.state_dict()` (what gets saved and loaded). An optimizer such as
`torch.optim.SGD` replaces the hand-written update of parts 1-3.

The submodule names are part of the contract: use exactly `linear1` and `linear2`, so
`state_dict()` has the keys `linear1.weight`, `linear1.bias`, `linear2.weight` and
`linear2.bias` (the grader loads its own weights into your model).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn


class TwoLayerNet(nn.Module):
    """y_pred = linear2(relu(linear1(x))), with linear1: D_in -> H, linear2: H -> D_out."""

    def __init__(self, D_in: int, H: int, D_out: int) -> None:
        """Create `self.linear1 = nn.Linear(D_in, H)` and `self.linear2 = nn.Linear(H, D_out)`.

        `super().__init__()` must run before any submodule is assigned.
        """
        super().__init__()
        # BEGIN SOLUTION
        # super().__init__() above set up the bookkeeping that makes the submodules
        # assigned here show up in parameters() and state_dict().
        self.linear1 = nn.Linear(D_in, H)
        self.linear2 = nn.Linear(H, D_out)
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map x of shape (N, D_in) to y_pred of shape (N, D_out).

        Call the submodules (`self.linear1(x)`), not their `.forward`, and let the caller
        call the model itself (`model(x)`).
        """
        # BEGIN SOLUTION
        result: torch.Tensor = self.linear2(torch.relu(self.linear1(x)))
        return result
        # END SOLUTION


class ParallelBlock(nn.Module):
    """(linear1(x) * linear2(x)).clamp(min=0), with linear1, linear2: D_in -> D_out.

    Two branches over the same input, multiplied elementwise: modules can be wired
    together any way `forward` likes, not just in a chain.
    """

    def __init__(self, D_in: int, D_out: int) -> None:
        """Create `self.linear1` and `self.linear2`, both `nn.Linear(D_in, D_out)`."""
        super().__init__()
        # BEGIN SOLUTION
        self.linear1 = nn.Linear(D_in, D_out)
        self.linear2 = nn.Linear(D_in, D_out)
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map x of shape (N, D_in) to shape (N, D_out)."""
        # BEGIN SOLUTION
        return (self.linear1(x) * self.linear2(x)).clamp(min=0)
        # END SOLUTION


def train_two_layer_net(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    learning_rate: float = 1e-4,
    steps: int = 500,
) -> list[float]:
    """Train `model` on (x, y) for `steps` full-batch steps; return the losses.

    Use `torch.optim.SGD(model.parameters(), lr=learning_rate)` and
    `torch.nn.functional.mse_loss(model(x), y)`. Each step: compute the loss, record
    `loss.item()` (before the update), `optimizer.zero_grad()`, `loss.backward()`,
    `optimizer.step()`.

    Returns the list of `steps` losses.

    Usual mistakes: creating the optimizer inside the loop (harmless for plain SGD, wrong
    for any optimizer that keeps state, such as momentum or Adam), forgetting
    `zero_grad()`, and calling `model.forward(x)` instead of `model(x)`.
    """
    # BEGIN SOLUTION
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
    # END SOLUTION
