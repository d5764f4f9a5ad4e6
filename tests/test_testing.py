"""The student-facing assertion helpers say what differs before comparing values."""

from __future__ import annotations

import pytest
import torch

from grader.testing import (
    FLOAT_TYPE_NAMES,
    assert_jacobian_close,
    assert_losses_close,
    assert_scalar_close,
    assert_tensor_close,
)


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


def test_losses_computed_in_float32_show_their_difference_and_name_float32() -> None:
    want = [0.6931471805599453, 0.5]
    got = [float(torch.tensor(want[0], dtype=torch.float32)) * (1 + 3e-6), 0.5]
    with pytest.raises(AssertionError) as caught:
        assert_losses_close(got, want, what="losses")
    message = str(caught.value)
    shown = message.split("got ", 1)[1].split(" (relative", 1)[0]
    got_text, want_text = shown.split(", expected ")
    assert got_text != want_text, message
    assert "float32's rounding" in message
    with pytest.raises(AssertionError) as caught:
        assert_losses_close([0.7], [0.5], what="losses")
    assert "float32" not in str(caught.value)


def test_loss_tolerance_follows_the_dtype_the_losses_came_from() -> None:
    # 1e-4 relative: float32 training's rounding, far outside float64's 1e-6.
    want32 = torch.tensor([0.75, 0.5], dtype=torch.float32)
    got = [0.75 * (1 + 1e-4), 0.5]
    assert_losses_close(got, want32, what="losses")  # float32: rtol 1e-3
    with pytest.raises(AssertionError, match="relative tolerance 1e-06"):
        assert_losses_close(got, want32.double(), what="losses")
    # A list of floats carries no dtype: float64's tolerance, unless `dtype` says otherwise.
    with pytest.raises(AssertionError, match="relative tolerance 1e-06"):
        assert_losses_close(got, want32.tolist(), what="losses")
    assert_losses_close(got, want32.tolist(), what="losses", dtype=torch.float32)
    # An explicit dtype wins over the tensor's, and an explicit rtol over both.
    with pytest.raises(AssertionError, match="relative tolerance 1e-06"):
        assert_losses_close(got, want32, what="losses", dtype=torch.float64)
    with pytest.raises(AssertionError, match="relative tolerance 1e-05"):
        assert_losses_close(got, want32, what="losses", rtol=1e-5)


def test_losses_of_a_tensor_are_checked_step_by_step() -> None:
    with pytest.raises(AssertionError, match="first differs at step 1: got 3, expected 2"):
        assert_losses_close([1.0, 3.0], torch.tensor([1.0, 2.0]), what="losses")
    with pytest.raises(AssertionError, match="2 losses, expected 3"):
        assert_losses_close([1.0, 2.0], torch.tensor([1.0, 2.0, 3.0]), what="losses")


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
    with pytest.raises(AssertionError, match=r"got 0\.50000001, expected 0\.5\."):
        assert_scalar_close(0.5 + 1e-8, 0.5, what="evaluate()", rel_tol=1e-9)


def test_losses_summed_instead_of_averaged_are_named_with_their_factor() -> None:
    with pytest.raises(AssertionError, match=r"exactly 259 times .*259 = N\*D_out.*summed"):
        assert_losses_close(
            [259.0 * 4, 1.0], [4.0, 3.0], what="losses", sizes={"N": 37, "D_out": 7}
        )
    with pytest.raises(AssertionError, match=r"exactly 1/37 times .*37 = N.*averaged"):
        assert_losses_close([4.0 / 37], [4.0], what="losses", sizes={"N": 37, "D_out": 7})


def test_a_loss_that_is_not_a_whole_factor_off_names_no_factor() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_losses_close([6.0], [4.0], what="losses", sizes={"N": 37})
    assert "times the reference" not in str(caught.value)


def test_divergence_names_the_first_non_finite_step_and_the_update() -> None:
    with pytest.raises(AssertionError, match=r"step 2.*The loss is inf at step 2.*sign"):
        assert_losses_close([3.0, 2.0, float("inf")], [3.0, 2.0, 1.0], what="losses")


def test_growing_losses_point_at_the_update_sign() -> None:
    with pytest.raises(AssertionError, match="grows where the reference's shrinks"):
        assert_losses_close([3.0, 4.0], [3.0, 2.0], what="losses")


def test_gradients_off_by_a_constant_factor_are_named() -> None:
    want = torch.randn(5, 3, dtype=torch.float64)
    with pytest.raises(AssertionError, match=r"grad_w1 is exactly 1/15 times .*15 = N\*D_out"):
        assert_tensor_close(want / 15, want, what="grad_w1", sizes={"N": 5, "D_out": 3})


def test_nan_in_a_tensor_is_named_with_where_it_is() -> None:
    want = torch.ones(2, 3)
    got = want.clone()
    got[1, 2] = float("nan")
    with pytest.raises(AssertionError, match=r"nan or inf in 1 of 6 .*index \(1, 2\)"):
        assert_tensor_close(got, want, what="y")


def test_device_mismatch_mentions_the_device_argument() -> None:
    got = torch.zeros(2, device="meta")
    with pytest.raises(AssertionError, match="the `device` argument where your function takes"):
        assert_tensor_close(got, torch.zeros(2), what="y")


def test_jacobian_mismatch_is_a_short_table_of_the_worst_entries() -> None:
    numerical = torch.eye(12, dtype=torch.float64)
    analytical = numerical * 2
    with pytest.raises(AssertionError) as caught:
        assert_jacobian_close(analytical, numerical, what="Sigmoid.backward", hint="check it")
    text = str(caught.value)
    assert "in 12 of 144 Jacobian entries" in text
    assert len(text.splitlines()) == 2 + 5 + 1  # message, header, five rows, hint
    assert text.endswith("Hint: check it")
    assert_jacobian_close(numerical + 1e-9, numerical, what="Sigmoid.backward")


def test_numpy_float_scalars_count_as_floats() -> None:
    import numpy as np

    assert {type(np.float32(1)).__name__, type(np.float64(1)).__name__} <= FLOAT_TYPE_NAMES


def test_a_float32_sum_in_another_order_passes_and_a_real_error_does_not() -> None:
    """Entries of a matmul's gradient that cancel to near zero carry the rounding of the
    large terms they sum: a result computed in float64 and rounded once must pass."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(37, 53, generator=generator, dtype=torch.float64) * 10
    y = torch.randn(37, 29, generator=generator, dtype=torch.float64) * 10
    want = x.float().T @ y.float()
    rounded_once = (x.T @ y).float()
    assert not torch.allclose(rounded_once, want, rtol=1.3e-5, atol=1e-5)  # the fixed atol fails
    assert_tensor_close(rounded_once, want, what="grad_w1")
    with pytest.raises(AssertionError, match="grad_w1 differs from the reference"):
        assert_tensor_close(rounded_once * 1.001, want, what="grad_w1")
