"""Part `training`: train the lecture's two-layer net with torch.optim and a DataLoader.

The tests build the model themselves (linear1 -> ReLU -> dropout -> linear2, 64 pixels in,
10 classes out) and seed torch with torch.manual_seed before calling you: the model's
initial weights, the DataLoader's shuffle and dropout all draw from that seed, so a correct
training gives exactly the reference's losses. Draw no other random numbers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: F401  (F.cross_entropy is the loss to use)
from torch import nn
from torch.utils.data import DataLoader, TensorDataset  # noqa: F401


def train_model(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
) -> list[float]:
    """Train `model` on (x, y) and return the loss of every step, as a list of floats.

    x is (N, 64) float32 pixels in [0, 1], y is (N,) int64 labels 0..9, on any device.
    - one DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True,
      num_workers=0), iterated once per epoch: it shuffles inputs and labels together;
    - torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9);
    - model.train() before training (dropout on);
    - per batch: loss = F.cross_entropy(model(inputs), labels); optimizer.zero_grad();
      loss.backward(); optimizer.step(); append loss.item().
    Usual mistakes: forgetting zero_grad (gradients add up over steps), shuffling x and y
    each with its own permutation (the labels no longer belong to their inputs).
    """
    # BEGIN SOLUTION: train with SGD and a shuffled DataLoader
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    model.train()
    losses = []
    for _ in range(epochs):
        for inputs, labels in loader:
            loss = F.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses
    # END SOLUTION


def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The predicted class of each row of x: an int64 tensor of shape (N,), on x's device.

    Put the model in eval mode first (dropout off: the same inputs always give the same
    classes) and compute under torch.no_grad(); the class is the argmax over dim 1.
    """
    # BEGIN SOLUTION: model.eval(), then the argmax of model(x)
    model.eval()
    with torch.no_grad():
        return model(x).argmax(dim=1)
    # END SOLUTION
