"""Hidden tests of part `finetuning`: pretrained features, frozen, and a new head for odd or even.

The fine-tuned model comes back as plain tensors, and everything about it is judged here:
its features against the shipped checkpoint, and its accuracy on held-out digits, computed
on this side from those tensors. The held-out digits never reach the student side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import probes
import pytest
import torch
import torch.nn.functional as F

from grader.testing import assert_losses_close, assert_tensor_close

SOLUTIONS = Path(__file__).resolve().parents[1]
ASSIGNMENT = SOLUTIONS.parents[1] / "assignments/pytorch_training"
DIGITS = probes.load_digits(ASSIGNMENT / "digits.pt")
# The checkpoint the assignment ships: ours, so read here, and passed to the probes as tensors.
PRETRAINED = torch.load(ASSIGNMENT / "pretrained.pt", weights_only=True)
HELD_OUT = probes.load_digits(SOLUTIONS / "held_out_digits.pt")
FINETUNING = {"epochs": 8, "batch_size": 100, "learning_rate": 0.1}
FEATURES = ("linear1.weight", "linear1.bias")
HEAD = ("linear2.weight", "linear2.bias")
# The reference scores 0.940 to 0.956 on odd or even over 60 seeds. An untrained head scores
# 0.49 on average and at most 0.71 over 40 seeds (weak/finetuning.py, which never steps, earns
# nothing); one trained on random features, the checkpoint never loaded, 0.79 to 0.85.
LOW_ACCURACY, HIGH_ACCURACY = 0.75, 0.9

PREPARE_HINT = (
    "model.load_state_dict(torch.load(path, weights_only=True, map_location=device)), "
    "model.requires_grad_(False), then model.linear2 = nn.Linear(model.linear2.in_features, "
    "num_classes).to(device), drawing no other random numbers."
)
FINETUNE_HINT = (
    "Train as train_model does, with the optimizer over the head only: "
    "torch.optim.SGD(model.linear2.parameters(), lr=learning_rate, momentum=0.9), one "
    "DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=0), "
    "model.train() first; per batch cross-entropy, zero_grad, backward, step, loss.item()."
)


def _parameters(got: dict[str, Any], function: str) -> dict[str, torch.Tensor]:
    assert "parameters" in got, (
        f"{function} returned a {got['type']}: expected the model (an nn.Module), prepared."
    )
    parameters: dict[str, torch.Tensor] = got["parameters"]
    assert sorted(parameters) == sorted(FEATURES + HEAD), (
        f"the prepared model has parameters {sorted(parameters)}; expected "
        f"{sorted(FEATURES + HEAD)}: keep the net as it is and assign the new head to "
        "model.linear2."
    )
    return parameters


@pytest.mark.points(9)
def test_prepare_finetuning(compare, seed, device):
    """prepare_finetuning: the checkpoint loaded and frozen, a fresh trainable head"""
    got, want = compare(probes.prepared_model, seed=seed, device=device, hidden=20)
    parameters = _parameters(got, "prepare_finetuning")
    for name in FEATURES:
        assert_tensor_close(
            parameters[name],
            want["parameters"][name],
            what=f"'{name}' after prepare_finetuning (the checkpoint's)",
            hint=PREPARE_HINT,
        )
    classes = want["num_classes"]
    head_shape = tuple(parameters["linear2.weight"].shape)
    assert head_shape == tuple(want["parameters"]["linear2.weight"].shape), (
        f"the new head's weight has shape {head_shape} for num_classes={classes}: replace "
        f"model.linear2 with nn.Linear(model.linear2.in_features, num_classes)."
    )
    trainable = sorted(name for name in FEATURES if got["requires_grad"][name])
    assert not trainable, (
        f"the pretrained features {trainable} still require grad: call "
        "requires_grad_(False) on the loaded model (or on model.linear1), so that nothing "
        "trains them."
    )
    frozen_head = sorted(name for name in HEAD if not got["requires_grad"][name])
    assert not frozen_head, (
        f"the new head's {frozen_head} do not require grad, so it cannot train: freeze the "
        "loaded model first, then create the new head (a fresh nn.Linear trains)."
    )
    for name in HEAD:
        assert_tensor_close(
            parameters[name],
            want["parameters"][name],
            what=f"'{name}' of the new head, as created",
            hint="Create the head once, with nn.Linear(model.linear2.in_features, "
            "num_classes) on the CPU and then .to(device), and draw no other random numbers: "
            "its initial weights then come from the test's seed.",
        )


@pytest.mark.points(9)
def test_finetune_losses(compare, seed, device):
    """finetune: the loss of every step matches the reference"""
    got, want = compare(
        probes.finetune_losses,
        seed=seed,
        device=device,
        digits=DIGITS,
        pretrained=PRETRAINED,
        **FINETUNING,
    )
    assert got["losses"]["values"] is not None, (
        f"finetune returned a {got['losses']['type']}: expected a Python list of floats, one "
        "loss.item() per step."
    )
    assert_losses_close(
        got["losses"]["values"],
        want["losses"]["values"],
        what="losses returned by finetune",
        dtype=torch.float32,
        hint=FINETUNE_HINT,
    )


# The frozen features are the checkpoint's whatever the seed, so this test cannot tell a
# fine-tuning from a replayed answer, nor from no fine-tuning at all (a finetune that never
# steps leaves every weight as loaded): it counts once finetune's seeded test passes.
@pytest.mark.counts_after("test_finetune_losses")
@pytest.mark.points(4)
def test_features_stay_frozen(student, seed, device):
    """prepare_finetuning and finetune: the pretrained features come out unchanged"""
    got = student(
        probes.finetuned_parameters,
        seed=seed,
        device=device,
        digits=DIGITS,
        pretrained=PRETRAINED,
        **FINETUNING,
    )
    parameters = _parameters(got, "prepare_finetuning")
    changed = {
        name: _largest_change(parameters[name], PRETRAINED[name])
        for name in FEATURES
        if not torch.equal(parameters[name].detach().cpu(), PRETRAINED[name])
    }
    assert not changed, (
        "the pretrained features changed during fine-tuning ("
        + ", ".join(f"'{name}' by up to {change}" for name, change in changed.items())
        + "): they were not frozen. Call requires_grad_(False) on the loaded model before "
        "creating the new head, and give the optimizer only model.linear2.parameters()."
    )


# Like part `training`'s held-out accuracy, any good fine-tuning earns this whatever its
# seed: it counts once finetune has matched the reference's losses on seeded inputs. The
# accuracy is computed here, from the tensors that came back, on digits the student side
# never sees.
@pytest.mark.counts_after("test_finetune_losses")
@pytest.mark.points(8)
def test_held_out_accuracy(compare, seed, device, metric, leaderboard):
    """prepare_finetuning and finetune: odd-or-even accuracy on held-out digits"""
    got, want = compare(
        probes.finetuned_parameters,
        seed=seed,
        device=device,
        digits=DIGITS,
        pretrained=PRETRAINED,
        **FINETUNING,
    )
    accuracy = _held_out_accuracy(_parameters(got, "prepare_finetuning"))
    reference = _held_out_accuracy(want["parameters"])
    leaderboard("fine-tuned held-out accuracy", accuracy)
    metric(accuracy, low=LOW_ACCURACY, high=HIGH_ACCURACY, name="held-out odd-or-even accuracy")
    assert accuracy > LOW_ACCURACY, (
        f"held-out odd-or-even accuracy {accuracy:.3f} (the reference: {reference:.3f}) is at "
        f"or below {LOW_ACCURACY}: the new head did not learn. Check that the labels reach "
        "F.cross_entropy as they are (0 or 1), that the optimizer holds model.linear2's "
        "parameters, and that gradients are zeroed every step."
    )


def _held_out_accuracy(parameters: dict[str, torch.Tensor]) -> float:
    """The fine-tuned net's odd-or-even accuracy on the held-out digits, in eval mode
    (no dropout), computed here from its parameters."""
    expected_shapes = {name: tuple(value.shape) for name, value in PRETRAINED.items()}
    expected_shapes["linear2.weight"] = (2, expected_shapes["linear1.weight"][0])
    expected_shapes["linear2.bias"] = (2,)
    for name, shape in expected_shapes.items():
        value = parameters[name]
        assert tuple(value.shape) == shape and value.is_floating_point(), (
            f"after fine-tuning, '{name}' has shape {tuple(value.shape)} and dtype "
            f"{value.dtype}; expected {shape}, floating point: a 2-class head for odd or even."
        )
    weights = {name: value.detach().cpu().to(torch.float32) for name, value in parameters.items()}
    x = HELD_OUT["x"].to(torch.float32) / 16.0
    hidden = F.relu(F.linear(x, weights["linear1.weight"], weights["linear1.bias"]))
    classes = F.linear(hidden, weights["linear2.weight"], weights["linear2.bias"]).argmax(dim=1)
    return float((classes == HELD_OUT["y"].to(torch.int64) % 2).float().mean())


def _largest_change(got: torch.Tensor, pretrained: torch.Tensor) -> str:
    if got.shape != pretrained.shape:
        return f"a new shape {tuple(got.shape)}"
    return f"{float((got.detach().cpu().to(torch.float32) - pretrained).abs().max()):.3g}"
