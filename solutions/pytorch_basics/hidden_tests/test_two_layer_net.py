"""Hidden tests of part `two_layer_net` (20 points): nn.Module subclasses and torch.optim."""

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

KEYS = ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
STRUCTURE_HINT = (
    "Call super().__init__() first, then assign the layers as attributes named exactly "
    "self.linear1 and self.linear2 (nn.Linear); layers kept in a plain list or dict, or "
    "created inside forward(), are not registered as parameters."
)


def _check_structure(got, want, cls):
    assert got["is_module"], f"{cls} must be a subclass of torch.nn.Module."
    assert got["keys"] == want["keys"], (
        f"{cls}().state_dict() has keys {got['keys']}, expected exactly {want['keys']}.\n"
        f"Hint: {STRUCTURE_HINT}"
    )
    assert got["linear_is_nn_linear"] == [True, True], (
        f"{cls}.linear1 / linear2 are {got['linear_types']}, expected torch.nn.Linear."
    )
    assert got["shapes"] == want["shapes"], (
        f"{cls} parameter shapes are {got['shapes']}, expected {want['shapes']} "
        "(nn.Linear(in_features, out_features) stores its weight as (out, in))."
    )
    assert got["n_parameters"] == want["n_parameters"], (
        f"{cls}().parameters() yields {got['n_parameters']} tensors, expected "
        f"{want['n_parameters']} (two weights and two biases).\nHint: {STRUCTURE_HINT}"
    )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_two_layer_net_forward")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "dims", [pytest.param([53, 29, 7], id="53-29-7"), pytest.param([11, 6, 3], id="11-6-3")]
)
def test_two_layer_net_structure(compare, dims):
    """TwoLayerNet: registers linear1 and linear2 with the right state_dict keys and shapes"""
    d_in, h, d_out = dims
    got, want = compare(probes.two_layer_net_structure, d_in=d_in, h=h, d_out=d_out)
    assert want["keys"] == KEYS
    _check_structure(got, want, "TwoLayerNet")


@pytest.mark.self_reported
@pytest.mark.counts_after("test_parallel_block_forward")
@pytest.mark.points(2)
def test_parallel_block_structure(compare):
    """ParallelBlock: registers linear1 and linear2 with the right state_dict keys and shapes"""
    got, want = compare(probes.parallel_block_structure, d_in=23, d_out=9)
    assert want["keys"] == KEYS
    _check_structure(got, want, "ParallelBlock")


@pytest.mark.points(3)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_two_layer_net_forward(compare, seed, device, dtype):
    """TwoLayerNet: the forward output matches the reference with the same weights"""
    got, want = compare(
        probes.two_layer_net_forward,
        seed=seed,
        device=device,
        dtype=dtype,
        n=37,
        d_in=53,
        h=29,
        d_out=7,
    )
    assert_tensor_close(
        got["y"],
        want["y"],
        what="TwoLayerNet(53, 29, 7)(x) with the test's weights loaded",
        hint="forward must return linear2(relu(linear1(x))): the ReLU goes between the two "
        "layers, not after linear2. Do not create layers or tensors inside forward.",
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parallel_block_forward(compare, seed, device, dtype):
    """ParallelBlock: the forward output matches the reference with the same weights"""
    got, want = compare(
        probes.parallel_block_forward,
        seed=seed,
        device=device,
        dtype=dtype,
        n=37,
        d_in=23,
        d_out=9,
    )
    assert_tensor_close(
        got["y"],
        want["y"],
        what="ParallelBlock(23, 9)(x) with the test's weights loaded",
        hint="forward must return (linear1(x) * linear2(x)).clamp(min=0): both branches see "
        "the same x, are multiplied elementwise, and the result is clamped at 0.",
    )


TRAIN_HINT = (
    "Create torch.optim.SGD(model.parameters(), lr=learning_rate) once, before the loop; each "
    "step: loss = F.mse_loss(model(x), y), record loss.item(), optimizer.zero_grad(), "
    "loss.backward(), optimizer.step(). Forgetting zero_grad makes the losses differ from "
    "step 2 on."
)


def _train(compare, seed, device, dtype, steps):
    return compare(
        probes.train_two_layer_net,
        seed=seed,
        device=device,
        dtype=dtype,
        n=37,
        d_in=53,
        h=29,
        d_out=7,
        lr=0.05,
        steps=steps,
    )


@pytest.mark.points(1)
@pytest.mark.parametrize(
    ("dtype", "steps"),
    [
        pytest.param("float32", 5, id="float32-5steps"),
        pytest.param("float64", 30, id="float64-30steps"),
    ],
)
def test_train_losses(compare, seed, device, dtype, steps):
    """train_two_layer_net: the losses of every step match the reference"""
    got, want = _train(compare, seed, device, dtype, steps)
    assert got["losses"] is not None, probes.no_losses_message(got, "train_two_layer_net")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_two_layer_net",
        dtype=getattr(torch, dtype),
        sizes={"N": 37, "D_out": 7},
        hint=TRAIN_HINT,
    )
    assert got["losses_type"] == "list" and set(got["loss_item_types"]) <= FLOAT_TYPE_NAMES, (
        f"train_two_layer_net returned a {got['losses_type']} of "
        f"{', '.join(got['loss_item_types'])}, expected a list of Python floats (loss.item())."
    )


@pytest.mark.points(2)
def test_train_final_weights(compare, seed, device):
    """train_two_layer_net: the trained weights match the reference"""
    got, want = _train(compare, seed, device, "float64", 20)
    assert sorted(got["state"]) == sorted(want["state"])
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key],
            want["state"][key],
            what=f"{key} after train_two_layer_net",
            hint=TRAIN_HINT + " Train the model you were given (model.parameters()), in place.",
        )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """two_layer_net.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "two_layer_net.py")
