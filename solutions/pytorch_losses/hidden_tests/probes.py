"""Probes of pytorch_losses: shipped to the student side, so only torch and the standard library.

Each probe builds its inputs from `seed` on the CPU, moves them to `device`, calls one
function of the part and returns plain data. The top level only defines things.
"""

from __future__ import annotations

import re

import torch

# aten ops that mean a built-in loss did the work, seen below every Python name: a family
# named alike (mse_loss, huber_loss, smooth_l1_loss, nll_loss, ...; log_softmax), so a loss the
# list did not name is caught too. Matched on the trusted side, against every op a call ran.
BUILTIN_LOSS_OP = re.compile(r".*(loss|log_softmax|cross_entropy).*")


def builtin_loss_ops(ops):
    """For the tests (trusted side): the ops among `ops` that are built-in losses."""
    return [name for name in ops if BUILTIN_LOSS_OP.fullmatch(name)]


def _dtype(name):
    return {"float32": torch.float32, "float64": torch.float64}[name]


def _regression_inputs(seed, device, dtype, shape):
    generator = torch.Generator().manual_seed(seed)
    dt = _dtype(dtype)
    pred = torch.randn(shape, generator=generator, dtype=dt)
    target = torch.randn(shape, generator=generator, dtype=dt)
    return pred.to(device), target.to(device)


def _classification_inputs(seed, device, dtype, n, c, scale):
    generator = torch.Generator().manual_seed(seed)
    logits = scale * torch.randn(n, c, generator=generator, dtype=_dtype(dtype))
    labels = torch.randint(0, c, (n,), generator=generator, dtype=torch.int64)
    return logits.to(device), labels.to(device)


def _ops_called(function, *args):
    """Run function(*args) and return (result, the names of the aten ops it ran)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpLog(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    log = OpLog()
    with log:
        result = function(*args)
    return result, sorted(log.names)


def mse_value(part, *, seed, device, dtype, shape):
    """mse_loss(pred, target) on random inputs of `shape`."""
    pred, target = _regression_inputs(seed, device, dtype, shape)
    return {"loss": part.mse_loss(pred, target)}


def mse_gradient(part, *, seed, device, dtype, shape):
    """The gradient of mse_loss(pred, target) with respect to pred."""
    pred, target = _regression_inputs(seed, device, dtype, shape)
    pred.requires_grad_(True)
    loss = part.mse_loss(pred, target)
    (grad,) = torch.autograd.grad(loss, pred)
    return {"loss": loss, "grad": grad}


def mse_ops_called(part, *, seed, device):
    """Every aten op mse_loss ran (self-reported: the log runs in the student's process)."""
    pred, target = _regression_inputs(seed, device, "float64", [6, 4])
    _, names = _ops_called(part.mse_loss, pred, target)
    return {"ops": names}


def cross_entropy_value(part, *, seed, device, dtype, n, c, scale):
    """cross_entropy(logits, labels) on random (n, c) logits times `scale`."""
    logits, labels = _classification_inputs(seed, device, dtype, n, c, scale)
    return {"loss": part.cross_entropy(logits, labels)}


def cross_entropy_gradient(part, *, seed, device, dtype, n, c, scale):
    """The gradient of cross_entropy(logits, labels) with respect to logits."""
    logits, labels = _classification_inputs(seed, device, dtype, n, c, scale)
    logits.requires_grad_(True)
    loss = part.cross_entropy(logits, labels)
    (grad,) = torch.autograd.grad(loss, logits)
    return {"loss": loss, "grad": grad}


def cross_entropy_ops_called(part, *, seed, device):
    """Every aten op cross_entropy ran (self-reported: the log runs in the student's process)."""
    logits, labels = _classification_inputs(seed, device, "float64", 8, 5, 1.0)
    _, names = _ops_called(part.cross_entropy, logits, labels)
    return {"ops": names}
