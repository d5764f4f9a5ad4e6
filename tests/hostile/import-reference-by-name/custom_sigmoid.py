"""Hostile: try to import the reference by every name the grader might use, or find it loaded."""

import gc
import importlib
import sys
import types

_reference = None
for name in ("solutions.pytorch_basics.custom_sigmoid", "_reference_pytorch_basics_custom_sigmoid",
             "pytorch_basics.custom_sigmoid", "reference.custom_sigmoid"):
    try:
        _reference = importlib.import_module(name)
        break
    except Exception:
        continue
if _reference is None:
    for obj in gc.get_objects():
        if isinstance(obj, types.ModuleType) and obj is not sys.modules.get(__name__):
            if hasattr(obj, "train_sigmoid_net") and "reference" in repr(obj):
                _reference = obj
if _reference is not None:
    Sigmoid = _reference.Sigmoid
    sigmoid = _reference.sigmoid
    train_sigmoid_net = _reference.train_sigmoid_net
else:

    import torch


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