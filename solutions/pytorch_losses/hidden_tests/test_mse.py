"""Hidden tests of part `mse` (10 points): the mean squared error by hand."""

from __future__ import annotations

import probes
import pytest

from grader.rules import Rule, forbidden_uses
from grader.testing import assert_tensor_close

CASES = [
    pytest.param("float32", [37], id="float32-37"),
    pytest.param("float64", [13, 7], id="float64-13x7"),
    pytest.param("float32", [3, 5, 4], id="float32-3x5x4"),
    pytest.param("float64", [2, 3, 4, 5], id="float64-2x3x4x5"),
]

VALUE_HINT = (
    "mse_loss is the mean of (pred - target) ** 2 over every element: divide the sum by "
    "pred.numel(), not by the first dimension, and return a 0-dim tensor of pred's dtype."
)
GRADIENT_HINT = (
    "The gradient of the mean squared error with respect to pred is "
    "2 * (pred - target) / pred.numel(). Build the loss from pred with torch operations only "
    "(no .item(), .detach(), torch.tensor(...) or in-place changes to pred)."
)


def _numel(shape):
    count = 1
    for size in shape:
        count *= size
    return count


@pytest.mark.points(3)
@pytest.mark.parametrize(("dtype", "shape"), CASES)
def test_mse_matches_reference(compare, seed, device, dtype, shape):
    """mse_loss(pred, target) matches the reference"""
    got, want = compare(probes.mse_value, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(
        got["loss"],
        want["loss"],
        what="mse_loss(pred, target)",
        hint=VALUE_HINT,
        sizes={"numel": _numel(shape), "N": shape[0]},
    )


@pytest.mark.points(2)
@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        pytest.param("float32", [11, 6], id="float32-11x6"),
        pytest.param("float64", [4, 3, 9], id="float64-4x3x9"),
    ],
)
def test_mse_gradient_matches_reference(compare, seed, device, dtype, shape):
    """mse_loss: the gradient with respect to pred matches the reference"""
    got, want = compare(probes.mse_gradient, seed=seed, device=device, dtype=dtype, shape=shape)
    assert_tensor_close(
        got["grad"],
        want["grad"],
        what="the gradient of mse_loss(pred, target) with respect to pred",
        hint=GRADIENT_HINT,
        sizes={"numel": _numel(shape), "N": shape[0]},
    )


@pytest.mark.self_reported
@pytest.mark.points(1)
@pytest.mark.counts_after("test_mse_matches_reference")
def test_no_builtin_mse_at_run_time(student, seed, device):
    """mse_loss: does not run the built-in MSE loss"""
    got = student(probes.mse_ops_called, seed=seed, device=device)
    builtins = probes.builtin_loss_ops(got["ops"])
    assert not builtins, (
        f"your mse_loss ran the built-in {', '.join(builtins)} (F.mse_loss, nn.MSELoss or "
        "another built-in loss). Compute the mean of the squared differences yourself."
    )


# Every built-in loss, not only MSE's own (2 * F.huber_loss(p, t, delta=1e30) is an MSE), and
# torch.distributions, whose log_prob methods are losses by other names.
NO_BUILTIN_MSE = Rule(
    attributes=frozenset({"distributions"}),
    modules=("torch.distributions",),
    attribute_patterns=(r".*_loss", r".*Loss"),
)


@pytest.mark.static_rule
@pytest.mark.points(1)
@pytest.mark.counts_after("test_mse_matches_reference")
def test_no_builtin_mse_in_source(student_source):
    """mse.py: no F.mse_loss, nn.MSELoss or any other built-in loss"""
    assert student_source is not None, "mse.py was not found in the submission."
    try:
        found = forbidden_uses(student_source, NO_BUILTIN_MSE)
    except SyntaxError as exc:
        pytest.fail(f"mse.py does not parse: {exc}")
    assert not found, (
        "mse.py must compute the loss itself. Found: "
        + "; ".join(found)
        + ". Use tensor arithmetic (subtract, square, mean); comments and docstrings are fine."
    )
