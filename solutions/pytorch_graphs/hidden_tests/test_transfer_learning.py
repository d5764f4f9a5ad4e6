"""Hidden tests of part `transfer_learning` (20 points): a frozen backbone and a new head."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.testing import assert_losses_close, assert_tensor_close

DIMS = [19, 16, 12, 7]  # d_in, hidden, feature_dim, classes of the pretrained head
NUM_CLASSES = 3
N = 24
REPLACE_HINT = (
    "Set requires_grad_(False) on every parameter of model.backbone, then assign "
    "model.head = nn.Linear(model.head.in_features, num_classes, device=..., dtype=...) with "
    "the old head's device and dtype; leave the backbone's weights as they are."
)
OPTIMIZER_HINT = (
    "Return torch.optim.SGD(model.head.parameters(), lr=learning_rate, momentum=0.9): only the "
    "head's parameters, so the pretrained backbone cannot change."
)
TRAIN_HINT = (
    "Use head_optimizer(model, learning_rate); put model.backbone in eval mode (its BatchNorm "
    "keeps its pretrained statistics) and model.head in train mode; each step: loss = "
    "F.cross_entropy(model(x), labels), record loss.item(), zero_grad, backward, step."
)


def _replace(compare, seed, device, dtype):
    return compare(
        probes.replace_head,
        seed=seed,
        device=device,
        dtype=dtype,
        dims=DIMS,
        num_classes=NUM_CLASSES,
        n=N,
    )


@pytest.mark.points(4)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_replace_head_output(compare, seed, device, dtype):
    """replace_head: with the test's weights in the new head, the model's output matches"""
    got, want = _replace(compare, seed, device, dtype)
    assert got["head_is_linear"] and got["head_replaced"], (
        f"model.head is a {got['head_type']} (replaced: {got['head_replaced']}); expected a "
        f"new nn.Linear.\nHint: {REPLACE_HINT}"
    )
    assert got["head_shapes"] == want["head_shapes"], (
        f"the new head's parameter shapes are {got['head_shapes']}, expected "
        f"{want['head_shapes']} (in_features of the old head, num_classes outputs)."
    )
    assert (got["head_dtypes"], got["head_devices"]) == (
        want["head_dtypes"],
        want["head_devices"],
    ), (
        f"the new head is {got['head_dtypes']} on {got['head_devices']}, expected "
        f"{want['head_dtypes']} on {want['head_devices']}.\nHint: {REPLACE_HINT}"
    )
    assert got["backbone_unchanged"], (
        "replace_head changed the backbone's weights.\n" + REPLACE_HINT
    )
    assert_tensor_close(got["output"], want["output"], what="model(x) after replace_head")


@pytest.mark.self_reported
@pytest.mark.counts_after("test_replace_head_output")
@pytest.mark.points(3)
def test_replace_head_freezes_only_the_backbone(compare, seed, device):
    """replace_head: the backbone's parameters are frozen, the new head's are trainable"""
    got, want = _replace(compare, seed, device, "float32")
    frozen_wrong = sorted(name for name, flag in got["backbone_requires_grad"].items() if flag)
    assert not frozen_wrong, (
        f"backbone parameters {frozen_wrong} still require grad.\nHint: {REPLACE_HINT}"
    )
    assert got["backbone_requires_grad"] == want["backbone_requires_grad"]
    assert got["head_requires_grad"] == want["head_requires_grad"], (
        "the new head's parameters must require grad: it is the part that trains."
    )
    assert got["returned_same_model"], "replace_head must return the model it was given."


def _optimizer(compare, seed, device):
    return compare(
        probes.head_optimizer,
        seed=seed,
        device=device,
        dtype="float64",
        dims=DIMS,
        num_classes=NUM_CLASSES,
        n=N,
        lr=0.05,
    )


@pytest.mark.points(3)
def test_head_optimizer_steps(compare, seed, device):
    """head_optimizer: two steps with it give the reference's weights"""
    got, want = _optimizer(compare, seed, device)
    assert got["is_optimizer"], f"head_optimizer returned a {got['type']}, expected an optimizer."
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key],
            want["state"][key],
            what=f"{key} after two optimizer steps",
            hint=OPTIMIZER_HINT,
        )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_head_optimizer_steps")
@pytest.mark.points(2)
def test_head_optimizer_holds_only_the_head(compare, seed, device):
    """head_optimizer: an SGD over exactly the head's parameters, lr and momentum as asked"""
    got, want = _optimizer(compare, seed, device)
    assert got["is_optimizer"], f"head_optimizer returned a {got['type']}, expected an optimizer."
    assert got["params"] == want["params"], (
        f"the optimizer holds {got['params']}, expected exactly {want['params']}.\n"
        f"Hint: {OPTIMIZER_HINT}"
    )
    assert (got["type"], got["groups"]) == (want["type"], want["groups"]), (
        f"got a {got['type']} with settings {got['groups']}, expected a {want['type']} with "
        f"{want['groups']}.\nHint: {OPTIMIZER_HINT}"
    )


def _train(compare, seed, device, dtype, steps):
    return compare(
        probes.train_head,
        seed=seed,
        device=device,
        dtype=dtype,
        dims=DIMS,
        num_classes=NUM_CLASSES,
        n=N,
        lr=0.1,
        steps=steps,
    )


@pytest.mark.points(5)
@pytest.mark.parametrize(
    ("dtype", "steps"),
    [
        pytest.param("float32", 5, id="float32-5steps"),
        pytest.param("float64", 30, id="float64-30steps"),
    ],
)
def test_train_head_losses(compare, seed, device, dtype, steps):
    """train_head: the losses of every step and the trained head match the reference"""
    got, want = _train(compare, seed, device, dtype, steps)
    assert got["losses"] is not None, probes.no_losses_message(got, "train_head")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_head",
        dtype=getattr(torch, dtype),
        hint=TRAIN_HINT,
    )
    for key in want["head_state"]:
        assert_tensor_close(
            got["head_state"][key],
            want["head_state"][key],
            what=f"head.{key} after train_head",
            hint=TRAIN_HINT,
        )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_train_head_losses")
@pytest.mark.points(3)
def test_train_head_leaves_the_backbone_alone(compare, seed, device):
    """train_head: the backbone's weights and BatchNorm statistics stay as pretrained"""
    got, want = _train(compare, seed, device, "float64", 8)
    assert want["backbone_changed"] == [] and want["backbone_grads"] == []
    assert got["backbone_changed"] == [], (
        f"training changed the backbone's {got['backbone_changed']}.\n"
        "Hint: running_mean/running_var change when the backbone runs in train mode: call "
        "model.backbone.eval(). Weights change when the optimizer holds them or they are not "
        "frozen. " + OPTIMIZER_HINT
    )
    assert got["backbone_grads"] == [], (
        f"backbone parameters {got['backbone_grads']} received gradients: they are frozen "
        "(requires_grad=False) and must not."
    )
