"""Hostile: leave a daemon behind that forges the outputs once the grader has written them."""

import json
import os
import time

FORGED = json.dumps({"score": 100.0, "tests": [], "forged": True})
PATHS = [os.path.join("__HOSTILE_OUTPUTS__", n) for n in ("results.json", "report.json")]

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3, 256):
            try:
                os.close(fd)
            except OSError:
                pass
        deadline = time.time() + 90
        while time.time() < deadline:
            for path in PATHS:
                try:
                    with open(path, "w") as handle:
                        handle.write(FORGED)
                except OSError:
                    pass
            time.sleep(0.05)
    os._exit(0)

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
