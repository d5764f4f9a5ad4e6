

from two_layer_net import _gradients_by_autograd as forward_backward
