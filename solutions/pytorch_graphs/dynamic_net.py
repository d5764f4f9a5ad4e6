"""Part 1: a dynamic computation graph that reuses one layer a random number of times.

Lecture idea: PyTorch builds the graph anew on every forward pass, from whatever Python
code actually ran. So ordinary control flow (a loop whose length is decided at run time)
needs no special graph operations, and reusing a module several times in one forward
pass shares its weights: autograd adds up the gradients of every use.

The lecture's `DynamicNet` draws its depth with `random.randint(0, 3)` inside
`forward`. A grader cannot reproduce that, so here the randomness is passed in: `forward`
takes the depth, and `sample_num_middle` draws it from a `random.Random` you are given.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn


class DynamicNet(nn.Module):
    """input_linear, then middle_linear `num_middle` times, then output_linear.

    `__init__(D_in, H, D_out)` creates exactly three `nn.Linear` layers, as attributes
    named `input_linear` (D_in -> H), `middle_linear` (H -> H) and `output_linear`
    (H -> D_out), so the state_dict keys are `input_linear.weight`, `input_linear.bias`,
    `middle_linear.weight`, ... (the tests load their own weights by these names).

    `forward(x, num_middle)` with x of shape (N, D_in) returns (N, D_out):

        h = relu(input_linear(x))
        repeat num_middle times:  h = relu(middle_linear(h))     # the same layer each time
        return output_linear(h)                                    # no ReLU on the output

    Usual mistakes: one `nn.Linear` per depth (a `ModuleList` of three middle layers does
    not share weights), a ReLU after the output layer, or drawing the depth inside forward.
    """

    def __init__(self, D_in: int, H: int, D_out: int) -> None:
        super().__init__()
        # BEGIN SOLUTION
        self.input_linear = nn.Linear(D_in, H)
        self.middle_linear = nn.Linear(H, H)
        self.output_linear = nn.Linear(H, D_out)
        # END SOLUTION

    def forward(self, x: torch.Tensor, num_middle: int) -> torch.Tensor:
        # BEGIN SOLUTION
        h_relu = self.input_linear(x).clamp(min=0)
        # Ordinary Python control flow: autograd records whatever actually ran, so each call
        # builds a graph of its own depth, and every use of middle_linear adds to its .grad.
        for _ in range(num_middle):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        result: torch.Tensor = self.output_linear(h_relu)
        return result
        # END SOLUTION


def sample_num_middle(rng: random.Random) -> int:
    """Draw how many times the middle layer runs: `rng.randint(0, 3)` (0 to 3, both included).

    Exactly one draw from `rng`, the generator you are given: never the global `random`
    module or torch's generator, so that a run can be reproduced from the generator's seed.
    """
    # BEGIN SOLUTION
    return rng.randint(0, 3)
    # END SOLUTION


def train_dynamic_net(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    rng: random.Random,
    learning_rate: float = 1e-4,
    steps: int = 500,
) -> list[float]:
    """Train `model` (a DynamicNet) on (x, y), with a new depth every step.

    Create `torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)` once.
    Each step:
      1. `num_middle = sample_num_middle(rng)` (one draw per step);
      2. `loss = F.mse_loss(model(x, num_middle), y, reduction="sum")`;
      3. record `loss.item()` (before the update);
      4. `optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`.

    Returns the list of `steps` losses; `model` is trained in place.
    """
    # BEGIN SOLUTION
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
    # END SOLUTION
