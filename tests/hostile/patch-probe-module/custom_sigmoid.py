def _probes_in_frames():
    """The probe module, from the frames of the import or call that runs this code: it is no
    longer in sys.modules (tests/hostile/rewrite-probes-to-return-the-formula)."""
    import sys as _frames_sys
    import types as _frames_types

    frame = _frames_sys._getframe()
    while frame is not None:
        found = frame.f_locals.get("probes")
        if isinstance(found, _frames_types.ModuleType):
            return found
        frame = frame.f_back
    return None


"""Hostile: rewrite the probes that judge on the student side, implement nothing."""

import sys

import torch

probes = _probes_in_frames()


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
