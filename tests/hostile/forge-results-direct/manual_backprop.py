"""Hostile: forge the grader's output files, whose paths it knows, then score nothing."""

import json
import os

FORGED = {"score": 100.0, "tests": [], "forged": True}
for name in ("results.json", "report.json"):
    path = os.path.join("__HOSTILE_OUTPUTS__", name)
    try:
        with open(path, "w") as handle:
            json.dump(FORGED, handle)
    except OSError:
        pass
    try:
        with open(path + ".tmp", "w") as handle:
            json.dump(FORGED, handle)
        os.replace(path + ".tmp", path)
    except OSError:
        pass

def forward_backward(x, y, w1, w2):
    raise NotImplementedError("forward_backward")


def train_manual(x, y, w1, w2, learning_rate=1e-6, steps=500):
    raise NotImplementedError("train_manual")
