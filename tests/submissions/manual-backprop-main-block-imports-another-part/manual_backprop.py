"""Part 1 (reference): a two-layer ReLU network trained with hand-written gradients.

No autograd here: every gradient is derived with the chain rule and computed with plain
tensor operations, exactly as in the lecture's "numpy-style" PyTorch example.
"""

from __future__ import annotations

import torch


def forward_backward(
    x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return the L2 loss of the ReLU net and its gradients with respect to w1 and w2.

    Shapes: x (N, D_in), y (N, D_out), w1 (D_in, H), w2 (H, D_out).
    """
    # Forward pass, keeping every intermediate the backward pass needs.
    h = x @ w1  # (N, H)
    h_relu = h.clamp(min=0)  # (N, H)
    y_pred = h_relu @ w2  # (N, D_out)
    diff = y_pred - y
    loss = (diff**2).sum()

    # Backward pass: walk the graph in reverse, one local derivative at a time.
    grad_y_pred = 2.0 * diff  # d loss / d y_pred, (N, D_out)
    grad_w2 = h_relu.t() @ grad_y_pred  # (H, D_out), same shape as w2
    grad_h_relu = grad_y_pred @ w2.t()  # (N, H)
    # ReLU passes the gradient through where its input was positive and blocks it
    # elsewhere (at exactly 0 the derivative is taken as 0, as autograd does).
    grad_h = grad_h_relu.masked_fill(h <= 0, 0.0)
    grad_w1 = x.t() @ grad_h  # (D_in, H), same shape as w1
    return loss, grad_w1, grad_w2


def train_manual(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Run `steps` steps of gradient descent on w1 and w2 in place; return the losses."""
    losses: list[float] = []
    for _ in range(steps):
        loss, grad_w1, grad_w2 = forward_backward(x, y, w1, w2)
        # .item() turns the 0-dim tensor into a Python float (and, on a GPU, waits for it).
        losses.append(loss.item())
        # sub_ writes into the caller's tensors; `w1 = w1 - ...` would only rebind a
        # local name and leave the caller's weights untouched.
        w1.sub_(learning_rate * grad_w1)
        w2.sub_(learning_rate * grad_w2)
    return losses


if __name__ == "__main__":
    # A self-check, run as `python manual_backprop.py`: part 2's autograd loop, trained from
    # the same start, should report the same losses.
    from autograd_loop import train_autograd

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 5, generator=g), torch.randn(8, 2, generator=g)
    w1, w2 = torch.randn(5, 4, generator=g), torch.randn(4, 2, generator=g)
    print(train_manual(x, y, w1.clone(), w2.clone(), learning_rate=1e-3, steps=3))
    # Parameters: the leaf tensors autograd trains.
    a1, a2 = torch.nn.Parameter(w1.clone()), torch.nn.Parameter(w2.clone())
    print(train_autograd(x, y, a1, a2, learning_rate=1e-3, steps=3))
