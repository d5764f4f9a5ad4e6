"""Regenerate the expected outputs the public tests compare against.

Usage: python solutions/pytorch_training/make_public_fixtures.py [--out DIR]

Writes `training.pt`, `tensorboard_logging.pt`, `checkpointing.pt` and `finetuning.pt`
(tensors, numbers and lists, loadable with weights_only=True) into DIR, by default
assignments/pytorch_training/public_fixtures. Public seeds are below 10000 (here 4000-4999);
hidden tests draw theirs at grading time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

SOLUTIONS_DIR = Path(__file__).resolve().parent
ASSIGNMENT_DIR = SOLUTIONS_DIR.parents[1] / "assignments" / "pytorch_training"
DEFAULT_OUT = ASSIGNMENT_DIR / "public_fixtures"
for folder in (SOLUTIONS_DIR, ASSIGNMENT_DIR / "public_tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import checkpointing  # noqa: E402
import finetuning  # noqa: E402
import tensorboard_logging  # noqa: E402
import training  # noqa: E402
from conftest import PRETRAINED_FILE, load_digits, two_layer_net  # noqa: E402

# The public tests train on the first 300 training digits: a second or less.
PUBLIC_DIGITS = 300
TRAINING = {"epochs": 2, "batch_size": 50, "learning_rate": 0.1}


def training_fixture() -> dict[str, object]:
    digits = load_digits(PUBLIC_DIGITS)
    torch.manual_seed(4001)
    model = two_layer_net(32)
    losses = training.train_model(model, digits["train_x"], digits["train_y"], **TRAINING)
    torch.manual_seed(4002)
    untrained = two_layer_net(32)
    x = torch.rand(40, 64, generator=torch.Generator().manual_seed(4003))
    return {
        "losses": losses,
        "val_predictions": training.predict(model, digits["val_x"]),
        "x": x,
        "predictions": training.predict(untrained, x),
    }


def tensorboard_logging_fixture() -> dict[str, object]:
    digits = load_digits(PUBLIC_DIGITS)
    torch.manual_seed(4011)
    model = two_layer_net(32)
    with tempfile.TemporaryDirectory() as folder:
        result = tensorboard_logging.train_with_logging(
            model,
            digits["train_x"],
            digits["train_y"],
            digits["val_x"],
            digits["val_y"],
            log_dir=folder,
            **TRAINING,
        )
    return {"losses": result["losses"], "val_accuracy": result["val_accuracy"]}


def checkpointing_fixture() -> dict[str, object]:
    torch.manual_seed(4021)
    model = two_layer_net(16)
    accuracies = [0.5, 0.75, 0.625, 0.75, 0.875, 0.25]
    best = float("-inf")
    returned = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "best.pt"
        for accuracy in accuracies:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(0.1)
            best = checkpointing.keep_best(model, accuracy, best, path)
            returned.append(best)
        kept = torch.load(path, weights_only=True)
    x = torch.rand(10, 64, generator=torch.Generator().manual_seed(4022))
    fresh = two_layer_net(16)
    fresh.load_state_dict(kept)
    fresh.eval()
    with torch.no_grad():
        outputs = fresh(x)
    return {
        "accuracies": accuracies,
        "returned": returned,
        "kept": dict(kept),
        "x": x,
        "outputs": outputs,
    }


def finetuning_fixture() -> dict[str, object]:
    torch.manual_seed(4031)
    model = finetuning.prepare_finetuning(two_layer_net(48), PRETRAINED_FILE, 2)
    head = {name: value.detach().clone() for name, value in model.linear2.named_parameters()}
    digits = load_digits(PUBLIC_DIGITS)
    torch.manual_seed(4032)
    losses = finetuning.finetune(model, digits["train_x"], digits["train_y"] % 2, **TRAINING)
    return {"head": head, "losses": losses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.save(training_fixture(), out / "training.pt")
    torch.save(tensorboard_logging_fixture(), out / "tensorboard_logging.pt")
    torch.save(checkpointing_fixture(), out / "checkpointing.pt")
    torch.save(finetuning_fixture(), out / "finetuning.pt")


if __name__ == "__main__":
    main()
