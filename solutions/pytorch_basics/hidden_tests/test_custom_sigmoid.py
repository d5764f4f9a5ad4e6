"""Hidden tests of part `custom_sigmoid` (20 points): a custom autograd function."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.rules import Rule, forbidden_uses
from grader.testing import (
    assert_jacobian_close,
    assert_losses_close,
    assert_runs_on_gpu,
    assert_tensor_close,
)

CASES = [
    pytest.param("float32", [37, 11], id="float32-37x11"),
    pytest.param("float64", [3, 5, 7], id="float64-3x5x7"),
]
SHAPE = [19, 31, 13, 5]
LR = 1e-4

FORWARD_HINT = (
    "Sigmoid.forward must return 1 / (1 + exp(-x)) elementwise, with the shape, dtype and "
    "device of x."
)
BACKWARD_HINT = (
    "Sigmoid.backward must return grad_y * y * (1 - y), where y is the forward output saved "
    "with ctx.save_for_backward (read it back with ctx.saved_tensors). Multiply by grad_y; "
    "do not return y * (1 - y) alone."
)
FORWARD_FAILED_NOTE = (
    "(Your Sigmoid.forward failed ({error}), so backward was given the output of a correct "
    "forward, saved with ctx.save_for_backward.)"
)
EXTREMES_HINT = (
    "exp(-x) overflows to inf for large negative x (and exp(x) for large positive x), and "
    "inf / inf is nan. Only exponentiate non-positive numbers, e.g. e = exp(-|x|), then "
    "1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0; compute the gradient from the "
    "saved output y as y * (1 - y)."
)


def _backward_hint(got):
    if got["forward_error"]:
        return BACKWARD_HINT + " " + FORWARD_FAILED_NOTE.format(error=got["forward_error"])
    return BACKWARD_HINT


@pytest.mark.points(2)
@pytest.mark.parametrize(("dtype", "shape"), CASES)
def test_forward_matches(compare, seed, device, dtype, shape):
    """Sigmoid.apply: the forward output matches the reference"""
    got, want = compare(probes.sigmoid_forward, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(got["y"], want["y"], what="Sigmoid.apply(x)", hint=FORWARD_HINT)


@pytest.mark.points(2)
@pytest.mark.parametrize(("dtype", "shape"), CASES)
def test_backward_matches(compare, seed, device, dtype, shape):
    """Sigmoid.backward: the gradient with respect to x matches the reference"""
    got, want = compare(probes.sigmoid_backward, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(
        got["grad_x"],
        want["grad_x"],
        what="the gradient Sigmoid.backward(ctx, grad_y) returned",
        hint=_backward_hint(got),
    )


# The Jacobians are computed in the student's process: they count only once the backward's
# own seeded comparison passes.
@pytest.mark.self_reported
@pytest.mark.counts_after("test_backward_matches")
@pytest.mark.points(1)
def test_gradcheck(student, seed, device):
    """Sigmoid: backward agrees with the numerical derivative of forward (float64, as gradcheck)"""
    got = student(probes.sigmoid_jacobians, seed=seed, device=device)
    assert not got["error"], (
        f"Sigmoid could not be differentiated: {got['error']}.\nHint: {BACKWARD_HINT}"
    )
    assert_jacobian_close(
        got["analytical"],
        got["numerical"],
        what="Sigmoid.backward",
        hint=BACKWARD_HINT,
    )


@pytest.mark.points(3)
def test_extreme_inputs_stay_finite(compare, seed, device):
    """Sigmoid.apply: outputs stay finite and correct for |x| up to 1e4 (float32)"""
    got, want = compare(probes.sigmoid_extremes, seed=seed, device=device, dtype="float32")
    assert got["y_finite"], (
        "Sigmoid.apply(x) returned inf or nan for large |x| in float32 (inputs: -1e4 ... 1e4)."
        f"\nHint: {EXTREMES_HINT}"
    )
    assert_tensor_close(
        got["y"], want["y"], what="Sigmoid.apply(x) for large |x|", hint=EXTREMES_HINT
    )


@pytest.mark.points(1)
def test_extreme_gradients_stay_finite(compare, seed, device):
    """Sigmoid.backward: gradients stay finite and correct for |x| up to 1e4 (float32)"""
    got, want = compare(probes.sigmoid_extremes_backward, seed=seed, device=device, dtype="float32")
    hint = EXTREMES_HINT
    if got["forward_error"]:
        hint += " " + FORWARD_FAILED_NOTE.format(error=got["forward_error"])
    assert got["grad_finite"], (
        "Sigmoid.backward returned inf or nan for large |x| in float32 (inputs: -1e4 ... 1e4)."
        f"\nHint: {hint}"
    )
    assert_tensor_close(got["grad_x"], want["grad_x"], what="the gradient for large |x|", hint=hint)


@pytest.mark.self_reported
@pytest.mark.counts_after("test_forward_matches")
@pytest.mark.points(2)
def test_sigmoid_uses_custom_function(student, seed, device):
    """sigmoid(x): returns Sigmoid.apply(x), a custom torch.autograd.Function"""
    got = student(probes.sigmoid_uses_custom_function, seed=seed, device=device, dtype="float64")
    assert got["is_function"], "Sigmoid must be a subclass of torch.autograd.Function."
    assert got["custom_node"] and got["grad_fn"] == "SigmoidBackward", (
        f"sigmoid(x) produced a tensor whose grad_fn is {got['grad_fn']}, expected "
        "SigmoidBackward (the backward node of your Sigmoid class). Return Sigmoid.apply(x); "
        "never call Sigmoid.forward directly or a built-in sigmoid."
    )
    assert got["same_as_apply"], "sigmoid(x) and Sigmoid.apply(x) returned different values."


# Not calling a built-in sigmoid is worth points only for a forward that is right.
@pytest.mark.self_reported
@pytest.mark.counts_after("test_forward_matches")
@pytest.mark.points(1)
def test_no_builtin_sigmoid_at_run_time(student, seed, device):
    """Sigmoid: forward and backward do not call a built-in sigmoid"""
    got = student(probes.sigmoid_uses_custom_function, seed=seed, device=device, dtype="float64")
    assert not got["elsewhere"], (
        f"your sigmoid worked outside the calling thread ({', '.join(got['elsewhere'])}), "
        "where this check cannot see which operations ran. Compute it in the calling thread, "
        "with torch.exp and arithmetic."
    )
    assert not got["builtins_called"], (
        f"your sigmoid ran the built-in {', '.join(got['builtins_called'])} (torch.sigmoid, "
        "one of its aliases, or an op with one inside: glu, silu, softmax, softplus). Write "
        "the formula yourself with torch.exp; built-in sigmoids are not allowed in this part, "
        "however they are reached."
    )


@pytest.mark.points(1)
@pytest.mark.parametrize(
    ("dtype", "steps"),
    [
        pytest.param("float32", 3, id="float32-3steps"),
        pytest.param("float64", 30, id="float64-30steps"),
    ],
)
def test_train_sigmoid_net(compare, seed, device, dtype, steps):
    """train_sigmoid_net: losses and trained weights match the reference"""
    got, want = compare(
        probes.train_sigmoid_net,
        seed=seed,
        device=device,
        dtype=dtype,
        shape=SHAPE,
        lr=LR,
        steps=steps,
    )
    hint = (
        "y_pred = sigmoid(x @ w1) @ w2 with your sigmoid, loss = ((y_pred - y) ** 2).sum(); "
        "record loss.item() before each update, update w1 and w2 in place inside "
        "torch.no_grad(), then zero their gradients. Training uses your Sigmoid.backward: if "
        "its own tests fail, fix it first."
    )
    assert got["losses"] is not None, probes.no_losses_message(got, "train_sigmoid_net")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_sigmoid_net",
        dtype=getattr(torch, dtype),
        sizes={"N": SHAPE[0], "D_out": SHAPE[3]},
        hint=hint,
    )
    assert_tensor_close(got["w1"], want["w1"], what="w1 after train_sigmoid_net", hint=hint)
    assert_tensor_close(got["w2"], want["w2"], what="w2 after train_sigmoid_net", hint=hint)


# --------------------------------------------------------------------------- static rule

# Built-in sigmoids: torch.sigmoid, Tensor.sigmoid(_), torch.special.expit,
# torch.nn.functional.sigmoid, torch.nn.Sigmoid, logsigmoid and friends; and the built-ins
# with a sigmoid inside: glu(stack([ones, x]))[0] is torch.sigmoid(x) bit for bit, silu(x) / x
# and softmax(stack([x, 0 * x]))[0] are sigmoids too, and so are the gradients of softplus,
# binary_cross_entropy_with_logits and the soft margin losses.
NO_BUILTIN_SIGMOID = Rule(
    attributes=frozenset(
        {"sigmoid", "sigmoid_", "expit", "Sigmoid", "logsigmoid", "log_sigmoid", "LogSigmoid"}
        | {"glu", "GLU", "silu", "silu_", "SiLU", "softmax", "Softmax", "log_softmax"}
        | {"LogSoftmax", "_softmax", "_log_softmax", "softplus", "Softplus"}
        | {"binary_cross_entropy_with_logits", "BCEWithLogitsLoss", "soft_margin_loss"}
        | {"SoftMarginLoss", "multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss"}
        # Recurrent cells compute sigmoid gates: a GRU cell with unit weights is sigmoid(x).
        | {"gru_cell", "lstm_cell", "GRUCell", "LSTMCell", "GRU", "LSTM", "gru", "lstm"}
    )
)


# As for the run-time check above: the rule is about a forward that is right.
@pytest.mark.static_rule
@pytest.mark.counts_after("test_forward_matches")
@pytest.mark.points(2)
def test_no_builtin_sigmoid_in_source(student_source):
    """custom_sigmoid.py: no built-in sigmoid (torch.sigmoid, expit, F.sigmoid, nn.Sigmoid, ...)"""
    assert student_source is not None, "custom_sigmoid.py was not found in the submission."
    try:
        found = forbidden_uses(student_source, NO_BUILTIN_SIGMOID)
    except SyntaxError as exc:
        pytest.fail(f"custom_sigmoid.py does not parse: {exc}")
    assert not found, (
        "custom_sigmoid.py must compute the sigmoid itself. Found: "
        + "; ".join(found)
        + ". Use torch.exp and arithmetic, and write attribute names out (no getattr with "
        "computed names, __dict__, eval, torch._C or torch.ops); comments and docstrings are "
        "fine."
    )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """custom_sigmoid.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "custom_sigmoid.py")
