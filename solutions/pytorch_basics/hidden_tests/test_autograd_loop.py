"""Hidden tests of part `autograd_loop` (15 points): training with loss.backward()."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.testing import (
    FLOAT_TYPE_NAMES,
    assert_losses_close,
    assert_runs_on_gpu,
    assert_tensor_close,
)

SHAPE_A = [37, 53, 29, 7]
SHAPE_B = [19, 31, 13, 5]
LR = 1e-5

LOSS_HINT = (
    "Usual causes: forgetting to zero w1.grad and w2.grad after each update (gradients "
    "accumulate, so the losses differ from step 2 on), recording the loss after the update "
    "instead of before, or a forward pass that differs from part 1 (relu, sum of squares)."
)
IN_PLACE_HINT = (
    "Update inside `with torch.no_grad():` with in-place operations (`w1 -= learning_rate * "
    "w1.grad`); `w1 = w1 - ...` creates a new tensor and the caller's w1 never changes."
)


def _run(compare, seed, device, dtype, shape, steps):
    return compare(
        probes.train_autograd,
        seed=seed,
        device=device,
        dtype=dtype,
        shape=shape,
        lr=LR,
        steps=steps,
    )


@pytest.mark.points(3)
@pytest.mark.parametrize(
    ("dtype", "shape", "steps"),
    [
        pytest.param("float32", SHAPE_A, 3, id="float32-3steps"),
        pytest.param("float64", SHAPE_B, 40, id="float64-40steps"),
    ],
)
def test_losses_match(compare, seed, device, dtype, shape, steps):
    """train_autograd: the losses of every step match the reference"""
    got, want = _run(compare, seed, device, dtype, shape, steps)
    assert got["losses"] is not None, probes.no_losses_message(got, "train_autograd")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_autograd",
        dtype=getattr(torch, dtype),
        sizes={"N": shape[0], "D_out": shape[3]},
        hint=LOSS_HINT,
    )


@pytest.mark.points(4)
def test_weights_updated_in_place(compare, seed, device):
    """train_autograd: updates the caller's w1 and w2 in place to the reference's weights"""
    got, want = _run(compare, seed, device, "float64", SHAPE_A, 15)
    assert got["w1_changed"] and got["w2_changed"], (
        "after train_autograd the caller's w1/w2 still hold their initial values "
        f"(w1 changed: {got['w1_changed']}, w2 changed: {got['w2_changed']}).\n"
        f"Hint: {IN_PLACE_HINT}"
    )
    assert_tensor_close(got["w1"], want["w1"], what="w1 after train_autograd", hint=LOSS_HINT)
    assert_tensor_close(got["w2"], want["w2"], what="w2 after train_autograd", hint=LOSS_HINT)


@pytest.mark.self_reported
@pytest.mark.counts_after("test_losses_match", "test_weights_updated_in_place")
@pytest.mark.points(2)
def test_gradients_zeroed(compare, seed, device):
    """train_autograd: w1.grad and w2.grad are zero (or None) on return"""
    got, _ = _run(compare, seed, device, "float32", SHAPE_B, 5)
    states = {"w1.grad": got["w1_grad"], "w2.grad": got["w2_grad"]}
    bad = [name for name, state in states.items() if state == "nonzero"]
    assert not bad, (
        f"{' and '.join(bad)} still hold(s) gradients when train_autograd returns. Zero the "
        "gradients after every update (w1.grad.zero_(), or set them to None)."
    )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_losses_match", "test_weights_updated_in_place")
@pytest.mark.points(2)
def test_weights_stay_leaves(compare, seed, device):
    """train_autograd: w1 and w2 are still leaf tensors that require grad"""
    got, _ = _run(compare, seed, device, "float32", SHAPE_B, 5)
    assert got["requires_grad"], (
        "after train_autograd, w1 or w2 no longer requires grad. Do not detach them or "
        "change requires_grad; update them in place inside torch.no_grad()."
    )
    assert got["leaves"], (
        "after train_autograd, w1 or w2 is no longer a leaf tensor: the update was recorded "
        "in the graph. " + IN_PLACE_HINT
    )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_losses_match", "test_weights_updated_in_place")
@pytest.mark.points(1)
def test_returns_list_of_floats(compare, seed, device):
    """train_autograd: returns a list of `steps` Python floats"""
    got, want = _run(compare, seed, device, "float32", SHAPE_B, 4)
    assert got["losses_type"] == "list", (
        f"train_autograd returned a {got['losses_type']}, expected a Python list of floats."
    )
    assert got["loss_item_types"] and set(got["loss_item_types"]) <= FLOAT_TYPE_NAMES, (
        f"train_autograd returned a list of {', '.join(got['loss_item_types']) or 'nothing'}, "
        "expected Python floats: append loss.item(), not the loss tensor (which also keeps "
        "the whole graph alive)."
    )
    assert len(got["losses"]) == len(want["losses"]), (
        f"train_autograd returned {len(got['losses'])} losses for steps=4, expected 4."
    )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """autograd_loop.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "autograd_loop.py")
