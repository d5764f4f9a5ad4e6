"""Part 5: make_loader is right; train_with_loader never zeroes the gradients and evaluate
averages the per-batch means."""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_loader(x, y, batch_size=8, shuffle=False):
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)


def train_with_loader(model, loader, optimizer, epochs=10):
    model.train()
    losses = []
    for _ in range(epochs):
        for x_batch, y_batch in loader:
            loss = F.mse_loss(model(x_batch), y_batch)
            losses.append(loss.item())
            loss.backward()
            optimizer.step()
    return losses


def evaluate(model, loader):
    model.eval()
    batch_means = []
    with torch.no_grad():
        for x_batch, y_batch in loader:
            batch_means.append(F.mse_loss(model(x_batch), y_batch).item())
    return sum(batch_means) / len(batch_means)
