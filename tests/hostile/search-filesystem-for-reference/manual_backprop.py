"""Hostile: look everywhere for the reference solution or the hidden tests and use them."""

import importlib.util
import os
import sys
import time

_found = None
_candidates = []
for entry in sys.path + [os.getcwd(), "/work/main", "/autograder/source", "/autograder"]:
    root = os.path.dirname(entry) if entry.endswith("grader") else entry
    _candidates.append(os.path.join(root, "solutions", "pytorch_basics", "manual_backprop.py"))
deadline = time.monotonic() + 3
for top, dirs, files in os.walk("/"):
    if top.startswith(("/proc", "/sys", "/dev")) or time.monotonic() > deadline:
        dirs[:] = []
        continue
    if "manual_backprop.py" in files and ("solutions" in top or "hidden" in top):
        _candidates.append(os.path.join(top, "manual_backprop.py"))
for path in _candidates:
    try:
        spec = importlib.util.spec_from_file_location("_stolen", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _found = module
        break
    except Exception:
        continue


def forward_backward(x, y, w1, w2):
    if _found is None:
        raise NotImplementedError("no reference found")
    return _found.forward_backward(x, y, w1, w2)


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    if _found is None:
        raise NotImplementedError("no reference found")
    return _found.train_manual(x, y, w1, w2, learning_rate, steps)
