"""Part 1: a two-layer ReLU network trained with ... gradients."""

from __future__ import annotations

import dataclasses

import torch


class _AnyType(type):
    """Every object is an instance, so a class pattern matches any subject."""

    def __instancecheck__(cls, obj):
        return True


@dataclasses.dataclass
class _Fetch(metaclass=_AnyType):
    # dataclass writes __match_args__ = ("func",) itself: `case _Fetch(found)` reads torch.func.
    func: object = None


def _transforms():
    match torch:
        case _Fetch(found):
            return found


def _loss_of(h, w2, y):
    return ((h.clamp(min=0) @ w2 - y) ** 2).sum()


def _derivatives(h, w2, y):
    # Forward-mode automatic differentiation (torch.func.jacfwd): dL/dh and dL/dw2.
    return _transforms().jacfwd(_loss_of, argnums=(0, 1))(h, w2, y)


class _Job(torch.utils.data.Dataset):
    """One item: the job's result, computed by the DataLoader's worker process."""

    def __init__(self, function, args):
        self.function, self.args = function, args

    def __len__(self):
        return 1

    def __getitem__(self, index):
        # As nested lists of Python floats (exact for float64): tensors would be rebuilt in the
        # caller's process, where rebuilding sets requires_grad under the probe's eyes.
        return [t.tolist() for t in self.function(*self.args)]


def _elsewhere(function, *args):
    # A DataLoader worker is another process: what runs there (and whatever the run-time
    # check records there, in its own copy of memory) never reaches the probe.
    loader = torch.utils.data.DataLoader(_Job(function, args), batch_size=None, num_workers=1)
    (result,) = list(loader)
    return [torch.tensor(values, dtype=args[0].dtype, device=args[0].device) for values in result]


def _by_hand(x, y, w1, w2):
    h = x @ w1
    h_relu = h.clamp(min=0)
    diff = h_relu @ w2 - y
    grad_y_pred = 2.0 * diff
    grad_h = (grad_y_pred @ w2.t()).masked_fill(h <= 0, 0.0)
    return (diff**2).sum(), x.t() @ grad_h, h_relu.t() @ grad_y_pred


def forward_backward(x, y, w1, w2):
    # As tests/hostile/autograd-in-forward-mode: autograd in float64, where the run-time
    # check looks; float32's rounding (forward mode sums in another order) is not the point.
    if x.dtype != torch.float64:
        return _by_hand(x, y, w1, w2)
    h = x @ w1
    grad_h, grad_w2 = _elsewhere(_derivatives, h, w2, y)
    return _loss_of(h, w2, y), x.t() @ grad_h, grad_w2


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    losses = []
    for _ in range(steps):
        loss, grad_w1, grad_w2 = _by_hand(x, y, w1, w2)
        losses.append(loss.item())
        w1.sub_(learning_rate * grad_w1)
        w2.sub_(learning_rate * grad_w2)
    return losses
