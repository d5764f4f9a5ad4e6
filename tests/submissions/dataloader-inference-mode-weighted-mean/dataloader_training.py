import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_loader(x, y, batch_size=8, shuffle=False):
    dataset = TensorDataset(x, y)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=False)


def train_with_loader(model, loader, optimizer, epochs=10):
    loss_fn = nn.MSELoss()
    model.train()
    losses = []
    for epoch in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def evaluate(model, loader):
    model.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for xb, yb in loader:
            batch_mse = nn.functional.mse_loss(model(xb), yb)
            total += batch_mse.item() * yb.numel()
            count += yb.numel()
    return total / count
