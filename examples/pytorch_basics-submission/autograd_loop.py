# Example student submission. Realistic mistake: gradients are never zeroed,
# so they accumulate across steps.
import torch


def train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=500):
    losses = []
    for _ in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
    return losses
