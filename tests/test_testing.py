"""The student-facing assertion helpers say what differs before comparing values."""

from __future__ import annotations

import pytest
import torch

from grader.testing import assert_losses_close, assert_scalar_close, assert_tensor_close


def test_shape_mismatch_names_both_shapes() -> None:
    with pytest.raises(AssertionError, match=r"grad_w1: shape \(3, 2\), expected \(2, 3\)"):
        assert_tensor_close(torch.zeros(3, 2), torch.zeros(2, 3), what="grad_w1")


def test_dtype_mismatch_explains_how_to_create_tensors() -> None:
    with pytest.raises(
        AssertionError, match=r"dtype torch.float32, expected torch.float64.*dtype=x.dtype"
    ):
        assert_tensor_close(torch.zeros(2), torch.zeros(2, dtype=torch.float64), what="y")


def test_value_mismatch_reports_greatest_error_and_hint() -> None:
    want = torch.zeros(4, dtype=torch.float64)
    got = want.clone()
    got[2] = 0.5
    with pytest.raises(AssertionError) as caught:
        assert_tensor_close(got, want, what="y_pred", hint="check the ReLU")
    text = str(caught.value)
    assert "y_pred differs from the reference" in text
    assert "Greatest absolute difference: 0.5 at index (2,)" in text
    assert text.endswith("Hint: check the ReLU")


def test_not_a_tensor_is_refused_with_its_type() -> None:
    with pytest.raises(AssertionError, match=r"expected a torch.Tensor, got list"):
        assert_tensor_close([1.0], torch.zeros(1), what="loss")


def test_tensor_subclass_is_refused() -> None:
    parameter = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(AssertionError, match=r"expected a torch.Tensor"):
        assert_tensor_close(parameter, torch.zeros(2), what="w")


def test_close_values_pass_within_dtype_tolerance() -> None:
    want = torch.ones(3)
    assert_tensor_close(want + 1e-7, want, what="y")


def test_losses_report_the_first_diverging_step() -> None:
    with pytest.raises(AssertionError, match="first differs at step 2: got 7, expected 3"):
        assert_losses_close([1.0, 2.0, 7.0, 9.0], [1.0, 2.0, 3.0, 4.0], what="losses")


def test_losses_must_be_python_floats() -> None:
    with pytest.raises(AssertionError, match="list of Tensor"):
        assert_losses_close([torch.tensor(1.0)], [1.0], what="losses")


def test_losses_length_mismatch() -> None:
    with pytest.raises(AssertionError, match="2 losses, expected 3"):
        assert_losses_close([1.0, 2.0], [1.0, 2.0, 3.0], what="losses")


def test_nan_loss_never_matches() -> None:
    with pytest.raises(AssertionError, match="step 0"):
        assert_losses_close([float("nan")], [1.0], what="losses")


def test_scalar_must_be_a_float() -> None:
    with pytest.raises(AssertionError, match="expected a Python float, got a tensor"):
        assert_scalar_close(torch.tensor(1.0), 1.0, what="evaluate()")
    assert_scalar_close(1.0 + 1e-9, 1.0, what="evaluate()")
