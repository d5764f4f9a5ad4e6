"""Hidden tests of part `cross_entropy` (10 points): softmax cross-entropy by hand."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.rules import Rule, forbidden_uses
from grader.testing import assert_tensor_close

CASES = [
    pytest.param("float32", 37, 5, id="float32-37x5"),
    pytest.param("float64", 8, 100, id="float64-8x100"),
    pytest.param("float32", 1, 3, id="float32-1x3"),
    pytest.param("float64", 64, 10, id="float64-64x10"),
]
LARGE = [
    pytest.param("float32", 29, 7, id="float32-29x7"),
    pytest.param("float64", 16, 12, id="float64-16x12"),
]
LARGE_SCALE = 1e4

VALUE_HINT = (
    "For each row, loss_i = log(sum_j exp(logits[i, j])) - logits[i, labels[i]]; return the "
    "mean over the N rows. Pick each row's label with logits[torch.arange(N), labels] or "
    "logits.gather(1, labels[:, None]) (logits[labels] picks whole rows)."
)
STABLE_HINT = (
    "exp of a large logit overflows to inf (inf - inf is nan). Subtract each row's largest "
    "logit m before exponentiating: log(sum_j exp(z_j)) = m + log(sum_j exp(z_j - m))."
)
GRADIENT_HINT = (
    "The gradient with respect to logits is (softmax(logits) - one_hot(labels)) / N. Build "
    "the loss from logits with torch operations only (no .item(), .detach() of the result "
    "or torch.tensor(...))."
)


def _finite(tensor):
    return isinstance(tensor, torch.Tensor) and bool(torch.isfinite(tensor).all())


@pytest.mark.points(3)
@pytest.mark.parametrize(("dtype", "n", "c"), CASES)
def test_cross_entropy_matches_reference(compare, seed, device, dtype, n, c):
    """cross_entropy(logits, labels) matches the reference"""
    got, want = compare(
        probes.cross_entropy_value, seed=seed, device=device, dtype=dtype, n=n, c=c, scale=3.0
    )
    assert_tensor_close(
        got["loss"],
        want["loss"],
        what="cross_entropy(logits, labels)",
        hint=VALUE_HINT,
        sizes={"N": n},
    )


@pytest.mark.points(3)
@pytest.mark.parametrize(("dtype", "n", "c"), LARGE)
def test_cross_entropy_large_logits(compare, seed, device, dtype, n, c):
    """cross_entropy: stays finite and correct for logits up to about 1e4"""
    got, want = compare(
        probes.cross_entropy_value,
        seed=seed,
        device=device,
        dtype=dtype,
        n=n,
        c=c,
        scale=LARGE_SCALE,
    )
    assert not isinstance(got["loss"], torch.Tensor) or _finite(got["loss"]), (
        f"cross_entropy returned {got['loss'].item()} for logits of size about 1e4 ({dtype}); "
        f"the reference returned {want['loss'].item():.6g}.\nHint: {STABLE_HINT}"
    )
    assert_tensor_close(
        got["loss"], want["loss"], what="cross_entropy for large logits", hint=STABLE_HINT
    )


@pytest.mark.points(2)
@pytest.mark.parametrize(("dtype", "n", "c"), CASES[:2])
def test_cross_entropy_gradient_matches_reference(compare, seed, device, dtype, n, c):
    """cross_entropy: the gradient with respect to logits matches the reference"""
    got, want = compare(
        probes.cross_entropy_gradient, seed=seed, device=device, dtype=dtype, n=n, c=c, scale=3.0
    )
    assert_tensor_close(
        got["grad"],
        want["grad"],
        what="the gradient of cross_entropy with respect to logits",
        hint=GRADIENT_HINT,
        sizes={"N": n},
    )


@pytest.mark.points(1)
@pytest.mark.parametrize(("dtype", "n", "c"), LARGE[:1])
def test_cross_entropy_gradient_large_logits(compare, seed, device, dtype, n, c):
    """cross_entropy: the gradient stays finite and correct for logits up to about 1e4"""
    got, want = compare(
        probes.cross_entropy_gradient,
        seed=seed,
        device=device,
        dtype=dtype,
        n=n,
        c=c,
        scale=LARGE_SCALE,
    )
    assert not isinstance(got["grad"], torch.Tensor) or _finite(got["grad"]), (
        f"the gradient of cross_entropy holds inf or nan for logits of size about 1e4 ({dtype})."
        f"\nHint: {STABLE_HINT}"
    )
    assert_tensor_close(
        got["grad"], want["grad"], what="the gradient for large logits", hint=STABLE_HINT
    )


@pytest.mark.self_reported
@pytest.mark.points(1)
@pytest.mark.counts_after("test_cross_entropy_matches_reference")
def test_no_builtin_log_softmax_at_run_time(student, seed, device):
    """cross_entropy: does not run a built-in log-softmax or cross-entropy"""
    got = student(probes.cross_entropy_ops_called, seed=seed, device=device)
    builtins = probes.builtin_loss_ops(got["ops"])
    assert not builtins, (
        f"your cross_entropy ran the built-in {', '.join(builtins)} (F.cross_entropy, "
        "nn.CrossEntropyLoss, another built-in loss or a log_softmax). Compute the log-sum-exp "
        "yourself."
    )


# Every built-in loss (F.nll_loss after a log-softmax computed by hand is cross-entropy), and
# torch.distributions: -Categorical(logits=z).log_prob(y).mean() is cross-entropy by another
# name, and its log_prob runs only a logsumexp, which honest solutions may run too.
NO_BUILTIN_CROSS_ENTROPY = Rule(
    attributes=frozenset(
        {"cross_entropy", "log_softmax", "LogSoftmax", "_log_softmax", "distributions"}
    ),
    modules=("torch.distributions",),
    attribute_patterns=(r".*_loss", r".*Loss", r".*cross_entropy.*"),
)


@pytest.mark.static_rule
@pytest.mark.points(1)
@pytest.mark.counts_after("test_cross_entropy_matches_reference")
def test_no_builtin_cross_entropy_in_source(student_source):
    """cross_entropy.py: no built-in loss, log_softmax or torch.distributions"""
    assert student_source is not None, "cross_entropy.py was not found in the submission."
    try:
        found = forbidden_uses(student_source, NO_BUILTIN_CROSS_ENTROPY)
    except SyntaxError as exc:
        pytest.fail(f"cross_entropy.py does not parse: {exc}")
    assert not found, (
        "cross_entropy.py must compute the loss itself. Found: "
        + "; ".join(found)
        + ". Use exp, sum, log and indexing; comments and docstrings are fine."
    )
