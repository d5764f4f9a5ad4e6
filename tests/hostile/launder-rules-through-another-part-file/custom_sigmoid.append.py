

from two_layer_net import _squash


def _forward(ctx, x):
    y = _squash(x)
    ctx.save_for_backward(y)
    return y


Sigmoid.forward = staticmethod(_forward)
