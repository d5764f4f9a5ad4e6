# Hostile: corrupt the interpreter the probes and the result encoder run in.
import builtins
import math


class Anything:
    def __eq__(self, other):
        return True

    def __float__(self):
        return 0.0


def train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=500):
    builtins.isinstance = lambda obj, kind: True
    builtins.len = lambda obj: 1
    builtins.float = lambda value=0: Anything()
    math.isclose = lambda *args, **kwargs: True
    return [Anything()] * steps
