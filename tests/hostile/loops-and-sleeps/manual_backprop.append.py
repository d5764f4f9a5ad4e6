import select
import threading
import time


def forward_backward(x, y, w1, w2):
    time.sleep(10**6)


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    threading.Event().wait()
    select.select([], [], [])
