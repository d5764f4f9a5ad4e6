# Example student submission. Realistic mistake: evaluate() averages the
# per-batch means, which over-weights a short last batch.
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
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def evaluate(model, loader):
    model.eval()
    batch_means = []
    with torch.no_grad():
        for x_batch, y_batch in loader:
            batch_means.append(F.mse_loss(model(x_batch), y_batch).item())
    return sum(batch_means) / len(batch_means)
