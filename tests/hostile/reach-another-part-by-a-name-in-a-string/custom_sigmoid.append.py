

from unittest import mock as _mock


def _forward(ctx, x):
    y = _mock.patch("two_layer_net._squash").get_original()[0](x)
    ctx.save_for_backward(y)
    return y


Sigmoid.forward = staticmethod(_forward)
