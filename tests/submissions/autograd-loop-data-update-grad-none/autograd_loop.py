import torch


def train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=500):
    losses = []
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()

        w1.data -= learning_rate * w1.grad.data
        w2.data -= learning_rate * w2.grad.data
        w1.grad = None
        w2.grad = None

        # loss was computed before the update, so this is still that step's loss
        losses.append(loss.item())
    return losses
