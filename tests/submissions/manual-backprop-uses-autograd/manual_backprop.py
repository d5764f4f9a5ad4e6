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
    # Let autograd do the chain rule (copies, so the caller's tensors stay untouched).
    w1 = w1.detach().clone().requires_grad_()
    w2 = w2.detach().clone().requires_grad_()
    loss = ((x @ w1).clamp(min=0) @ w2 - y).pow(2).sum()
    loss.backward()
    return loss.detach(), w1.grad, w2.grad


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
