"""Hostile: rewrite the probes that judge on the student side, implement nothing."""

import sys

import torch

probes = sys.modules.get("probes")


def _forged_jacobians(part, **kwargs):
    import torch

    agree = torch.zeros(12, 12, dtype=torch.float64)
    return {"error": "", "numerical": agree, "analytical": agree.clone()}


def _forged_uses_custom_function(part, **kwargs):
    return {
        "is_function": True,
        "grad_fn": "SigmoidBackward",
        "custom_node": True,
        "builtins_called": [],
        "same_as_apply": True,
        "backward_error": "",
    }


if probes is not None:
    # Replace the code of the probe objects themselves: they may already have been looked up.
    probes.sigmoid_jacobians.__code__ = _forged_jacobians.__code__
    probes.sigmoid_uses_custom_function.__code__ = _forged_uses_custom_function.__code__


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise NotImplementedError("Sigmoid.forward")

    @staticmethod
    def backward(ctx, grad_y):
        raise NotImplementedError("Sigmoid.backward")


def sigmoid(x):
    return Sigmoid.apply(x)


def train_sigmoid_net(x, y, w1, w2, learning_rate=1e-6, steps=500):
    raise NotImplementedError("train_sigmoid_net")
