"""Hostile: go through other processes' /proc entries for the reference or the hidden tests."""

import os

_source = None
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    base = f"/proc/{pid}"
    for relative in ("cwd/solutions/pytorch_basics/autograd_loop.py",
                     "root/work/main/solutions/pytorch_basics/autograd_loop.py",
                     "cwd/../solutions/pytorch_basics/autograd_loop.py"):
        try:
            with open(os.path.join(base, relative)) as handle:
                _source = handle.read()
        except OSError:
            continue
    try:
        for fd in os.listdir(f"{base}/fd"):
            target = os.readlink(f"{base}/fd/{fd}")
            if target.endswith("autograd_loop.py"):
                with open(f"{base}/fd/{fd}") as handle:
                    _source = handle.read()
    except OSError:
        pass
    for name in ("environ", "cmdline"):
        try:
            with open(f"{base}/{name}", "rb") as handle:
                print(pid, name, handle.read()[:2000])
        except OSError:
            pass

if _source:
    exec(_source)
else:

    def train_autograd(x, y, w1, w2, learning_rate=1e-6, steps=500):
        raise NotImplementedError("nothing found in /proc")
