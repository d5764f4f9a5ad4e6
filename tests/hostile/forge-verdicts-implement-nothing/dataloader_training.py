def _probes_in_frames():
    """The probe module, from the frames of the import or call that runs this code: it is no
    longer in sys.modules (tests/hostile/rewrite-probes-to-return-the-formula)."""
    import sys as _frames_sys
    import types as _frames_types

    frame = _frames_sys._getframe()
    while frame is not None:
        found = frame.f_locals.get("probes")
        if isinstance(found, _frames_types.ModuleType):
            return found
        frame = frame.f_back
    return None


"""Hostile: nothing implemented; the probes are rewritten to answer without calling it.

The forged probes run with the probes module's globals, so they rebuild the seeded inputs
with its own helpers: a loader's batches are its inputs, so they come out right.
"""

import sys

import torch

probes = _probes_in_frames()


def _forged_batches(part, *, seed, device, dtype, n, d_in, d_out, batch_size):
    x, y = _indexed_data(seed, device, dtype, n, d_in, d_out)  # noqa: F821 (probes' global)
    sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    return {
        "is_dataloader": True,
        "len": len(sizes),
        "sizes": sizes,
        "x": x,
        "y": y,
        "second_epoch_same": True,
    }


def _forged_defaults(part, *, seed, device, dtype, n, d_in, d_out):
    x, y = _indexed_data(seed, device, dtype, n, d_in, d_out)  # noqa: F821 (probes' global)
    sizes = [8] * (n // 8) + ([n % 8] if n % 8 else [])
    order = list(range(n))
    return {"sizes": sizes, "orders": [order, order], "x": x, "y": y}


def _forged_shuffle(part, *, seed, device, dtype, n, d_in, d_out, batch_size):
    sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    first = list(range(n))
    first.reverse()
    second = list(range(1, n)) + [0]
    return {"orders": [first, second], "sizes": [sizes, sizes]}


def _forged_train(part, *, seed, device, dtype, n, d_in, h, d_out, batch_size, lr, epochs):
    batches = -(-n // batch_size)
    model = _plain_net(0, device, dtype, d_in, h, d_out)  # noqa: F821 (probes' global)
    return {
        "losses": [1.0] * (batches * epochs),
        "losses_type": "list",
        "loss_item_types": ["float"],
        "n_batches": batches,
        "forward_calls": batches * epochs,
        "all_training": True,
        "state": _state(model),  # noqa: F821 (probes' global)
    }


def _forged_evaluate(part, *, seed, device, dtype, n, d_in, h, d_out, batch_size):
    return {
        "value": 1.0,
        "value_type": "float",
        "forward_calls": 5,
        "any_training": False,
        "any_grad": False,
        "params_grad": [False, False, False, False],
    }


if probes is not None:
    # Replace the code of the probe objects themselves: they may already have been looked up.
    probes.make_loader_batches.__code__ = _forged_batches.__code__
    probes.make_loader_defaults.__code__ = _forged_defaults.__code__
    probes.make_loader_shuffle.__code__ = _forged_shuffle.__code__
    probes.train_with_loader.__code__ = _forged_train.__code__
    probes.evaluate.__code__ = _forged_evaluate.__code__


def make_loader(x, y, batch_size=8, shuffle=False):
    raise NotImplementedError("make_loader")


def train_with_loader(model, loader, optimizer, epochs=10):
    raise NotImplementedError("train_with_loader")


def evaluate(model, loader):
    raise NotImplementedError("evaluate")
