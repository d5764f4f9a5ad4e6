"""Probes of the hidden suites of `pytorch_training`.

A probe seeds torch (`torch.manual_seed(seed)`: the model's initial weights, the
DataLoader's shuffle and dropout all draw from it, so both sides train identically), builds
the lecture's two-layer net with plain `torch.nn`, calls the part's functions and returns
plain data. The digits arrive as arguments (uint8 pixels 0..16 and uint8 labels); the
held-out digits arrive without their labels, which only the trusted side holds.

Shipped to the student side verbatim: standard library and torch only, no reference code,
no secrets. Files are written only in a fresh temporary folder, private to the job.
"""

from __future__ import annotations

import io
import re
import tempfile
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

PIXELS, CLASSES = 64, 10
DROPOUT = 0.2


def _type_name(obj) -> str:
    return type(obj).__name__


def _first_sentence(exc) -> str:
    """What failed, from an exception whose message goes on: torch.load's refusal is
    paragraphs of advice, in terminal bold, that end in loading with weights_only=False."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()
    return (lines[0].split(". ")[0].rstrip(".") if lines else "")[:300]


def _t(t):
    """A detached plain copy of a tensor, or the object unchanged when it is not one."""
    if isinstance(t, torch.Tensor):
        return t.detach().clone().as_subclass(torch.Tensor)
    return t


def _floats(values):
    """A list of floats as data, or None (with what it was) when it is not one."""
    if not isinstance(values, (list, tuple)):
        return {"values": None, "type": _type_name(values)}
    return {"values": [float(v) for v in values], "type": _type_name(values)}


def _file_bytes(path):
    return torch.frombuffer(bytearray(Path(path).read_bytes()), dtype=torch.uint8)


def _folder_files(folder):
    """Every file under `folder`, as {relative name: uint8 tensor of its bytes}."""
    root = Path(folder)
    return {
        str(path.relative_to(root)): _file_bytes(path)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _pixels(images, device):
    return (images.to(torch.float32) / 16.0).to(device)


def _labels(labels, device):
    return labels.to(torch.int64).to(device)


def two_layer_net(hidden, device):
    """The lecture's two-layer net, with dropout so that train and eval mode differ."""
    layers = OrderedDict(
        linear1=nn.Linear(PIXELS, hidden),
        relu=nn.ReLU(),
        dropout=nn.Dropout(DROPOUT),
        linear2=nn.Linear(hidden, CLASSES),
    )
    return nn.Sequential(layers).to(device)


def _seeded_inputs(seed, device, n):
    """n random 8x8 images, pixels in [0, 1]: inputs no training saw."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, PIXELS, generator=generator).to(device)


# ------------------------------------------------------------------ part `training`


def train_losses(part, *, seed, device, digits, hidden, epochs, batch_size, learning_rate):
    """train_model on the training digits: the loss of every step."""
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    losses = part.train_model(
        model,
        _pixels(digits["train_x"], device),
        _labels(digits["train_y"], device),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
    )
    return {"losses": _floats(losses)}


def held_out_predictions(
    part, *, seed, device, digits, held_out_x, hidden, epochs, batch_size, learning_rate
):
    """train_model, then predict on held-out digits (their labels stay on the trusted side)."""
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    part.train_model(
        model,
        _pixels(digits["train_x"], device),
        _labels(digits["train_y"], device),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
    )
    return {"predictions": _t(part.predict(model, _pixels(held_out_x, device)))}


def predict_twice(part, *, seed, device, hidden, n):
    """predict, twice, on a model left in train mode (as training leaves it)."""
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    x = _seeded_inputs(seed, device, n)
    first = _t(part.predict(model, x))
    second = _t(part.predict(model, x))
    return {"first": first, "second": second}


# ------------------------------------------------------------------ part `tensorboard_logging`


def logged_training(part, *, seed, device, digits, hidden, epochs, batch_size, learning_rate):
    """train_with_logging into a fresh log folder: what it returned and the folder's files."""
    read_folder = _folder_files
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    with tempfile.TemporaryDirectory() as folder:
        log_dir = str(Path(folder) / "runs")
        result = part.train_with_logging(
            model,
            _pixels(digits["train_x"], device),
            _labels(digits["train_y"], device),
            _pixels(digits["val_x"], device),
            _labels(digits["val_y"], device),
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            log_dir=log_dir,
        )
        files = read_folder(log_dir) if Path(log_dir).is_dir() else {}
    if not isinstance(result, dict):
        return {"type": _type_name(result), "files": files}
    return {
        "type": _type_name(result),
        "losses": _floats(result.get("losses")),
        "val_accuracy": _floats(result.get("val_accuracy")),
        "files": files,
    }


# ------------------------------------------------------------------ part `checkpointing`


def _accuracies(seed, rounds):
    """Validation accuracies of `rounds` epochs, drawn from the seed: they rise and fall,
    and the last epoch is the worst, so the last weights are never the best."""
    generator = torch.Generator().manual_seed(seed)
    drawn = [round(0.5 + 0.4 * float(v), 4) for v in torch.rand(rounds - 1, generator=generator)]
    return [*drawn, round(min(drawn) - 0.05, 4)]


def keep_best_file(part, *, seed, device, hidden, rounds):
    """keep_best after each of `rounds` epochs (the weights move, the accuracy is drawn):
    the bytes of the file it kept, what it returned, and the weights after each epoch."""
    read_bytes = _file_bytes
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    accuracies = _accuracies(seed, rounds)
    best = float("-inf")
    returned = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "best.pt"
        for accuracy in accuracies:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(0.1 * torch.randn_like(parameter))
            best = part.keep_best(model, accuracy, best, path)
            returned.append(best if isinstance(best, (int, float)) else None)
        saved = read_bytes(path) if path.is_file() else None
    return {"accuracies": accuracies, "returned": returned, "file": saved}


def decode_state(part, *, data):
    """A checkpoint's bytes read as plain tensors (weights_only): where no student code runs."""
    try:
        state = torch.load(io.BytesIO(data.numpy().tobytes()), weights_only=True)
    except Exception as exc:  # deliberate: report, the test says what was wrong
        return {"state": None, "error": f"{_type_name(exc)}: {_first_sentence(exc)}"}
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        return {"state": None, "error": f"it holds a {_type_name(state)}, not a state_dict"}
    return {"state": {k: _t(v) for k, v in state.items()}, "error": ""}


def load_model_outputs(part, *, seed, device, hidden, n):
    """A state_dict saved here, load_model into a freshly initialised net in train mode:
    the loaded net's outputs on seeded inputs."""
    torch.manual_seed(seed)
    trained = two_layer_net(hidden, device)
    fresh = two_layer_net(hidden, device)
    x = _seeded_inputs(seed, device, n)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "best.pt"
        torch.save(trained.state_dict(), path)
        loaded = part.load_model(path, fresh)
    if not isinstance(loaded, nn.Module):
        return {"type": _type_name(loaded), "outputs": None}
    with torch.no_grad():
        outputs = _t(loaded(x))
    return {"type": _type_name(loaded), "outputs": outputs, "training": bool(loaded.training)}


# ------------------------------------------------------------------ part `finetuning`


def _parameters(model):
    """A model's parameters as data: {name: plain copy} and {name: requires_grad}."""
    named = list(model.named_parameters())
    return {name: _t(value) for name, value in named}, {
        name: bool(value.requires_grad) for name, value in named
    }


def _seeded_checkpoint(seed, hidden):
    """A state_dict shaped like the pretrained net's, its values drawn from the seed."""
    generator = torch.Generator().manual_seed(seed)
    shapes = {
        "linear1.weight": (hidden, PIXELS),
        "linear1.bias": (hidden,),
        "linear2.weight": (CLASSES, hidden),
        "linear2.bias": (CLASSES,),
    }
    return {name: 0.2 * torch.randn(shape, generator=generator) for name, shape in shapes.items()}


def _frozen_features_new_head(hidden, device, pretrained, num_classes):
    """The pretrained net as prepare_finetuning leaves it, built here with plain torch."""
    model = two_layer_net(hidden, device)
    model.load_state_dict(pretrained)
    model.requires_grad_(False)
    model.linear2 = nn.Linear(hidden, num_classes).to(device)
    return model


def _odd_or_even(labels, device):
    return (labels.to(torch.int64) % 2).to(device)


def prepared_model(part, *, seed, device, hidden):
    """prepare_finetuning with a checkpoint and a number of classes drawn from the seed: the
    returned model's parameters and which of them require grad."""
    copy_parameters = _parameters
    num_classes = int(torch.randint(2, 9, (1,), generator=torch.Generator().manual_seed(seed)))
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pretrained.pt"
        torch.save(_seeded_checkpoint(seed, hidden), path)
        prepared = part.prepare_finetuning(model, path, num_classes)
    if not isinstance(prepared, nn.Module):
        return {"type": _type_name(prepared), "num_classes": num_classes}
    values, requires_grad = copy_parameters(prepared)
    return {
        "type": _type_name(prepared),
        "num_classes": num_classes,
        "parameters": values,
        "requires_grad": requires_grad,
    }


def finetune_losses(part, *, seed, device, digits, pretrained, epochs, batch_size, learning_rate):
    """finetune on a model prepared here (features loaded and frozen, a new 2-class head)."""
    hidden = pretrained["linear1.weight"].shape[0]
    torch.manual_seed(seed)
    model = _frozen_features_new_head(hidden, device, pretrained, 2)
    losses = part.finetune(
        model,
        _pixels(digits["train_x"], device),
        _odd_or_even(digits["train_y"], device),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
    )
    return {"losses": _floats(losses)}


def finetuned_parameters(
    part, *, seed, device, digits, pretrained, epochs, batch_size, learning_rate
):
    """prepare_finetuning with the pretrained checkpoint, then finetune for odd or even: the
    parameters the model ends with (the tests judge them where no student code runs)."""
    copy_parameters = _parameters
    hidden = pretrained["linear1.weight"].shape[0]
    torch.manual_seed(seed)
    model = two_layer_net(hidden, device)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pretrained.pt"
        torch.save(pretrained, path)
        model = part.prepare_finetuning(model, path, 2)
    if not isinstance(model, nn.Module):
        return {"type": _type_name(model)}
    part.finetune(
        model,
        _pixels(digits["train_x"], device),
        _odd_or_even(digits["train_y"], device),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
    )
    return {"type": _type_name(model), "parameters": copy_parameters(model)[0]}


# ------------------------------------------------------------------ for the tests (trusted side)


def load_digits(path):
    """A digits file of this assignment, read as plain tensors (its files are ours, not a
    student's): the tests pass what they need on to the probes as arguments."""
    return torch.load(path, weights_only=True)
