class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.full_like(x, float("nan"))

    @staticmethod
    def backward(ctx, grad_y):
        return torch.full_like(grad_y, float("inf"))


def sigmoid(x):
    return Sigmoid.apply(x)


def train_sigmoid_net(x, y, w1, w2, learning_rate=1e-6, steps=500):
    with torch.no_grad():
        w1.fill_(float("nan"))
        w2.fill_(float("-inf"))
    return [float("nan")] * steps
