# Example student submission: this part is correct.
import torch
import torch.nn.functional as F


class TwoLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = torch.nn.Linear(D_in, H)
        self.linear2 = torch.nn.Linear(H, D_out)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


class ParallelBlock(torch.nn.Module):
    def __init__(self, D_in, D_out):
        super().__init__()
        self.linear1 = torch.nn.Linear(D_in, D_out)
        self.linear2 = torch.nn.Linear(D_in, D_out)

    def forward(self, x):
        return (self.linear1(x) * self.linear2(x)).clamp(min=0)


def train_two_layer_net(model, x, y, learning_rate=1e-4, steps=500):
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    losses = []
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses
