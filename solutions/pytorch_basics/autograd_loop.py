"""Part 2: the same network, with the gradients computed by autograd.

Lecture idea: tensors created with `requires_grad=True` record every operation applied
to them; `loss.backward()` then walks that graph backwards and stores d loss / d w in
`w.grad`. Three things are yours to get right:

  - the weight update must not itself be recorded: do it inside `torch.no_grad()`;
  - update in place (`w1 -= ...`), so w1 stays the same leaf tensor (writing
    `w1 = w1 - ...` creates a new, non-leaf tensor and the caller's weights never change);
  - gradients *accumulate* across `backward()` calls, so zero them after each update
    (`w1.grad.zero_()`).
"""

from __future__ import annotations

import torch


def train_autograd(
    x: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    learning_rate: float = 1e-6,
    steps: int = 500,
) -> list[float]:
    """Train the two-layer ReLU network of part 1 with autograd.

    Shapes: x (N, D_in), y (N, D_out), w1 (D_in, H), w2 (H, D_out); w1 and w2 are leaf
    tensors with `requires_grad=True`.

    Each step:
      1. forward: `y_pred = relu(x @ w1) @ w2`, `loss = ((y_pred - y) ** 2).sum()`;
      2. record `loss.item()` (before the update);
      3. `loss.backward()`;
      4. inside `torch.no_grad()`: `w1 -= learning_rate * w1.grad` (same for w2), then
         zero both gradients.

    Returns the list of `steps` losses. On return `w1.grad` and `w2.grad` are zero (or
    None), and w1, w2 are still leaf tensors that require grad.

    Usual mistakes: updating outside `no_grad` (an error, or a graph that grows every
    step), forgetting to zero the gradients (training diverges), `.data` tricks that hide
    bugs, and calling `.item()` after the update instead of before.
    """
    # BEGIN SOLUTION
    losses: list[float] = []
    for _ in range(steps):
        # Building the forward pass from tensors that require grad records the graph.
        y_pred = (x @ w1).clamp(min=0) @ w2
        loss = ((y_pred - y) ** 2).sum()
        losses.append(loss.item())

        # Fills w1.grad and w2.grad (adding to whatever is already there).
        loss.backward()

        # The update must not be recorded in the graph: inside no_grad the in-place
        # subtraction keeps w1 and w2 as leaves that still require grad.
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            # Gradients accumulate across backward() calls, so clear them before the
            # next step.
            w1.grad.zero_()
            w2.grad.zero_()
    return losses
    # END SOLUTION
