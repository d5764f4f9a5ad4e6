"""Part 1: a two-layer ReLU network trained with gradients you derive by hand.

Lecture idea: before autograd, every gradient was written out with the chain rule.
Doing it once for a tiny network shows what `loss.backward()` does for you later.

The network (the lecture's running example)::

    h = x @ w1              # (N, D_in) @ (D_in, H)  -> (N, H)
    h_relu = relu(h)        # (N, H)
    y_pred = h_relu @ w2    # (N, H) @ (H, D_out)    -> (N, D_out)
    loss = ((y_pred - y) ** 2).sum()

Rules for this file: plain tensor operations only. Do not use `.backward(`, anything
from `torch.autograd`, `requires_grad` or `torch.func`; the grader checks.
"""

from __future__ import annotations

import torch


def forward_backward(
    x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Compute the loss of the network above and its gradients with respect to w1 and w2.

    Shapes: x (N, D_in), y (N, D_out), w1 (D_in, H), w2 (H, D_out).

    Returns `(loss, grad_w1, grad_w2)`:
      - `loss`: a 0-dim tensor, the sum of squared errors;
      - `grad_w1`: d loss / d w1, same shape, dtype and device as w1;
      - `grad_w2`: d loss / d w2, same shape, dtype and device as w2.

    Work backwards through the forward pass, one step at a time:
      1. d loss / d y_pred = 2 * (y_pred - y)
      2. a matmul `a @ b` sends the upstream gradient g to `g @ b.T` (for a) and
         `a.T @ g` (for b); check each result has the shape of the thing it is the
         gradient of;
      3. ReLU lets the gradient through where h > 0 and sets it to 0 elsewhere.

    Usual mistakes: transposing the wrong operand (the shapes tell you which), forgetting
    the factor 2, and zeroing entries of `h` or `h_relu` in place while building the ReLU
    mask (they are still needed; change a copy of the gradient instead).
    """
    # BEGIN SOLUTION
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
    # END SOLUTION


def train_manual(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Run `steps` steps of plain gradient descent using `forward_backward`.

    Each step: compute the loss and gradients, record `loss.item()` (a Python float,
    taken before the update), then update w1 and w2 *in place*:
    `w1 -= learning_rate * grad_w1` (or `w1.sub_(...)`). The caller's tensors must hold
    the trained weights afterwards, so `w1 = w1 - ...` (which only rebinds a local name)
    is not enough.

    Returns the list of `steps` losses, one float per step.
    """
    # BEGIN SOLUTION
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
    # END SOLUTION
