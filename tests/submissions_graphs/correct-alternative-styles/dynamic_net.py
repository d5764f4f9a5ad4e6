"""A correct DynamicNet written differently: F.relu, a while loop, nn.MSELoss."""

import random

import torch
import torch.nn.functional as F
from torch import nn


class DynamicNet(nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.input_linear = nn.Linear(D_in, H)
        self.middle_linear = nn.Linear(H, H)
        self.output_linear = nn.Linear(H, D_out)

    def forward(self, x, num_middle):
        h = F.relu(self.input_linear(x))
        done = 0
        while done < num_middle:
            h = F.relu(self.middle_linear(h))
            done += 1
        return self.output_linear(h)


def sample_num_middle(rng: random.Random) -> int:
    return int(rng.randint(0, 3))


def train_dynamic_net(model, x, y, rng, learning_rate=1e-4, steps=500):
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    criterion = nn.MSELoss(reduction="sum")
    losses = []
    for _ in range(steps):
        loss = criterion(model(x, sample_num_middle(rng)), y)
        optimizer.zero_grad()
        loss.backward()
        losses.append(float(loss))
        optimizer.step()
    return losses
