# Hostile: make every comparison say "equal", then return zeros of the right shapes.
import numpy.testing

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
numpy.testing.assert_allclose = lambda *args, **kwargs: None


def forward_backward(x, y, w1, w2):
    return x.new_zeros(()), torch.zeros_like(w1), torch.zeros_like(w2)


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    return [0.0] * steps
