# Example student submission (bundled with the grader for `make run`).
# Realistic mistake: the backward pass forgets the ReLU mask.


def forward_backward(x, y, w1, w2):
    h = x.mm(w1)
    h_relu = h.clamp(min=0)
    y_pred = h_relu.mm(w2)
    loss = (y_pred - y).pow(2).sum()

    grad_y_pred = 2.0 * (y_pred - y)
    grad_w2 = h_relu.t().mm(grad_y_pred)
    grad_h = grad_y_pred.mm(w2.t())  # BUG: should be zero where h < 0
    grad_w1 = x.t().mm(grad_h)
    return loss, grad_w1, grad_w2


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    losses = []
    for _ in range(steps):
        loss, grad_w1, grad_w2 = forward_backward(x, y, w1, w2)
        losses.append(loss.item())
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return losses
