"""Hidden tests of part `manual_backprop` (20 points): hand-written gradients."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.rules import Rule, forbidden_uses
from grader.testing import (
    FLOAT_TYPE_NAMES,
    assert_losses_close,
    assert_runs_on_gpu,
    assert_tensor_close,
)

# Sizes other than the running example (64, 1000, 100, 10), so hard-coded sizes fail.
SHAPE_A = [37, 53, 29, 7]
SHAPE_B = [19, 31, 13, 5]
CASES = [
    pytest.param("float32", SHAPE_A, id="float32-37x53x29x7"),
    pytest.param("float64", SHAPE_B, id="float64-19x31x13x5"),
]
LR = 1e-5


def _sizes(shape):
    """The sizes a loss summed instead of averaged (or the reverse) is off by."""
    n, _, _, d_out = shape
    return {"N": n, "D_out": d_out}


GRAD_HINT = (
    "Usual causes: a missing or wrong ReLU mask (the gradient is zero where h <= 0), "
    "the factor 2 of the square, a transpose on the wrong operand, or zeroing h / h_relu "
    "in place while building the mask (change a copy of the gradient instead)."
)


@pytest.mark.points(1)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_loss_matches(compare, seed, device, dtype):
    """forward_backward: the loss matches the reference"""
    got, want = compare(
        probes.forward_backward, seed=seed, device=device, dtype=dtype, shape=SHAPE_A
    )
    assert got["loss_is_tensor"], (
        "forward_backward must return the loss as a 0-dim tensor (not a Python number); "
        "keep it a tensor and call .item() only in train_manual."
    )
    assert_tensor_close(
        got["loss"],
        want["loss"],
        what="the loss returned by forward_backward",
        sizes=_sizes(SHAPE_A),
        hint="The loss is the SUM of squared errors ((y_pred - y) ** 2).sum() (not the mean) "
        "of y_pred = relu(x @ w1) @ w2, returned as a 0-dim tensor.",
    )


# One test per gradient: grad_w2 comes before grad_w1 in the backward pass, so a mistake that
# reaches only grad_w1 (a missing ReLU mask, a transpose) still earns grad_w2's points, and
# opens the rules below, which a placeholder (zeros for both) does not.
@pytest.mark.points(1.5)
@pytest.mark.parametrize(("dtype", "shape"), CASES)
def test_grad_w2_matches(compare, seed, device, dtype, shape):
    """forward_backward: grad_w2 matches the reference"""
    got, want = compare(probes.forward_backward, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(
        got["grad_w2"],
        want["grad_w2"],
        what="grad_w2 returned by forward_backward",
        sizes=_sizes(shape),
        hint="grad_w2 must have the shape, dtype and device of w2. " + GRAD_HINT,
    )


@pytest.mark.points(1.5)
@pytest.mark.parametrize(("dtype", "shape"), CASES)
def test_grad_w1_matches(compare, seed, device, dtype, shape):
    """forward_backward: grad_w1 matches the reference"""
    got, want = compare(probes.forward_backward, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(
        got["grad_w1"],
        want["grad_w1"],
        what="grad_w1 returned by forward_backward",
        sizes=_sizes(shape),
        hint="grad_w1 must have the shape, dtype and device of w1. " + GRAD_HINT,
    )


# Not using autograd is worth points only for gradients that are right: placeholder
# gradients obey the rule too. So does a forged report, hence the gradients' own tests.
@pytest.mark.self_reported
@pytest.mark.counts_after("test_grad_w2_matches", "test_grad_w1_matches")
@pytest.mark.points(2)
def test_works_without_autograd(student, seed, device):
    """forward_backward: computes the gradients without autograd (also under torch.no_grad)"""
    got = student(
        probes.forward_backward_no_autograd,
        seed=seed,
        device=device,
        dtype="float64",
        shape=SHAPE_B,
    )
    used = [*got["autograd_calls"]]
    if got["backward_passes"]:
        used.append(f"{got['backward_passes']} backward pass(es) of the autograd engine")
    if got["graph_ops"]:
        used.append(f"operations recorded in an autograd graph ({', '.join(got['graph_ops'])})")
    if got["elsewhere"]:
        used.append(
            f"work outside the calling thread ({', '.join(got['elsewhere'])}), which this "
            "check cannot see: compute in the calling thread"
        )
    assert not used, (
        f"forward_backward used autograd at run time ({'; '.join(used)}). This part is about "
        "writing the backward pass by hand with plain tensor operations."
    )
    assert not got["inputs_touched"], (
        "forward_backward changed requires_grad or .grad of the caller's w1/w2; compute the "
        "gradients by hand and leave the inputs alone."
    )
    assert not got["loss_requires_grad"] and not got["returned_in_graph"], (
        "a tensor returned by forward_backward requires grad or has a grad_fn, so it was "
        "computed through autograd; compute the gradients by hand from plain tensors."
    )
    assert not got["no_grad_error"], (
        "forward_backward failed when called inside torch.no_grad() "
        f"({got['no_grad_error']}). Hand-written gradients do not need autograd, so they "
        "work there too."
    )
    assert got["no_grad_same"], (
        "forward_backward gave different gradients inside torch.no_grad(); hand-written "
        "gradients must not depend on autograd being enabled."
    )


@pytest.mark.points(2)
@pytest.mark.parametrize(
    ("dtype", "shape", "steps"),
    [
        pytest.param("float32", SHAPE_A, 3, id="float32-3steps"),
        pytest.param("float64", SHAPE_B, 40, id="float64-40steps"),
    ],
)
def test_train_manual_losses(compare, seed, device, dtype, shape, steps):
    """train_manual: the losses of every step match the reference"""
    got, want = compare(
        probes.train_manual,
        seed=seed,
        device=device,
        dtype=dtype,
        shape=shape,
        lr=LR,
        steps=steps,
    )
    assert got["losses"] is not None, probes.no_losses_message(got, "train_manual")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_manual",
        dtype=getattr(torch, dtype),
        sizes=_sizes(shape),
        hint="Record loss.item() BEFORE the update of that step, use the learning_rate "
        "argument, and update both w1 and w2 every step (w1 -= learning_rate * grad_w1). "
        "If step 0 already differs, check forward_backward.",
    )


@pytest.mark.points(3)
def test_train_manual_updates_in_place(compare, seed, device):
    """train_manual: updates the caller's w1 and w2 in place to the reference's weights"""
    got, want = compare(
        probes.train_manual,
        seed=seed,
        device=device,
        dtype="float64",
        shape=SHAPE_A,
        lr=LR,
        steps=15,
    )
    hint = (
        "`w1 = w1 - learning_rate * grad_w1` only rebinds a local name and leaves the caller's "
        "tensor unchanged; update in place with `w1 -= ...` or `w1.sub_(...)`."
    )
    assert got["w1_changed"] and got["w2_changed"], (
        "after train_manual the caller's w1/w2 still hold their initial values "
        f"(w1 changed: {got['w1_changed']}, w2 changed: {got['w2_changed']}).\nHint: {hint}"
    )
    assert_tensor_close(got["w1"], want["w1"], what="w1 after train_manual", hint=hint)
    assert_tensor_close(got["w2"], want["w2"], what="w2 after train_manual", hint=hint)


@pytest.mark.self_reported
@pytest.mark.counts_after("test_train_manual_losses", "test_train_manual_updates_in_place")
@pytest.mark.points(1)
def test_train_manual_returns_list_of_floats(compare, seed, device):
    """train_manual: returns a list of `steps` Python floats"""
    got, want = compare(
        probes.train_manual,
        seed=seed,
        device=device,
        dtype="float32",
        shape=SHAPE_B,
        lr=LR,
        steps=4,
    )
    assert got["losses_type"] == "list", (
        f"train_manual returned a {got['losses_type']}, expected a Python list of floats."
    )
    assert got["loss_item_types"] and set(got["loss_item_types"]) <= FLOAT_TYPE_NAMES, (
        f"train_manual returned a list of {', '.join(got['loss_item_types']) or 'nothing'}, "
        "expected Python floats: append loss.item(), not the loss tensor."
    )
    assert len(got["losses"]) == len(want["losses"]), (
        f"train_manual returned {len(got['losses'])} losses for steps=4, expected 4 (one per step)."
    )


# --------------------------------------------------------------------------- static rule

NO_AUTOGRAD = Rule(
    attributes=frozenset(
        {
            "backward",
            "requires_grad",
            "requires_grad_",
            "autograd",
            "func",
            "enable_grad",
            "set_grad_enabled",
            "grad_fn",
        }
    ),
    names=frozenset({"autograd", "functorch"}),
    modules=("torch.autograd", "torch.func", "functorch"),
)


# As for the run-time check above: the rule is about gradients that are right.
@pytest.mark.static_rule
@pytest.mark.counts_after("test_grad_w2_matches", "test_grad_w1_matches")
@pytest.mark.points(2)
def test_no_autograd_in_source(student_source):
    """manual_backprop.py: no .backward(), torch.autograd, requires_grad or torch.func"""
    assert student_source is not None, "manual_backprop.py was not found in the submission."
    try:
        found = forbidden_uses(student_source, NO_AUTOGRAD)
    except SyntaxError as exc:
        pytest.fail(f"manual_backprop.py does not parse: {exc}")
    assert not found, (
        "manual_backprop.py must compute gradients by hand, without autograd. Found: "
        + "; ".join(found)
        + ". Remove every .backward(), torch.autograd, requires_grad and torch.func use, and "
        "write attribute names out (no getattr with computed names, __dict__, eval, torch._C "
        "or torch.ops); comments and docstrings are fine."
    )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """manual_backprop.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "manual_backprop.py")
