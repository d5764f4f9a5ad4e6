"""Hidden tests of part `dynamic_net` (25 points): a graph built anew by every forward pass."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.testing import FLOAT_TYPE_NAMES, assert_losses_close, assert_tensor_close

DIMS = [23, 17, 5]
KEYS = [
    "input_linear.weight",
    "input_linear.bias",
    "middle_linear.weight",
    "middle_linear.bias",
    "output_linear.weight",
    "output_linear.bias",
]
STRUCTURE_HINT = (
    "Create exactly three nn.Linear layers in __init__ (self.input_linear, self.middle_linear, "
    "self.output_linear) and reuse self.middle_linear in forward: a ModuleList of separate "
    "middle layers gives each depth its own weights, which is not the lecture's weight sharing."
)
FORWARD_HINT = (
    "forward(x, num_middle): h = relu(input_linear(x)); then num_middle times "
    "h = relu(middle_linear(h)); return output_linear(h) (no ReLU after the output layer)."
)
TRAIN_HINT = (
    "Create torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9) once; each "
    "step draw the depth with sample_num_middle(rng) (one draw per step, from the rng you are "
    "given, never the global `random`), loss = F.mse_loss(model(x, depth), y, "
    "reduction='sum'), record loss.item(), zero_grad, backward, step."
)


@pytest.mark.self_reported
@pytest.mark.counts_after("test_forward_every_depth")
@pytest.mark.points(2)
def test_structure(compare):
    """DynamicNet: three nn.Linear layers, the middle one shared by every depth"""
    got, want = compare(probes.dynamic_net_structure, dims=DIMS)
    assert want["keys"] == KEYS
    assert got["is_module"], "DynamicNet must be a subclass of torch.nn.Module."
    assert got["keys"] == want["keys"], (
        f"DynamicNet(23, 17, 5).state_dict() has keys {got['keys']}, expected {want['keys']}.\n"
        f"Hint: {STRUCTURE_HINT}"
    )
    assert got["shapes"] == want["shapes"], (
        f"parameter shapes are {got['shapes']}, expected {want['shapes']}."
    )
    assert got["n_parameters"] == want["n_parameters"], (
        f"DynamicNet has {got['n_parameters']} parameter tensors, expected "
        f"{want['n_parameters']}.\nHint: {STRUCTURE_HINT}"
    )


@pytest.mark.points(5)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_every_depth(compare, seed, device, dtype):
    """DynamicNet.forward: the output for 0, 1, 2 and 3 middle layers matches the reference"""
    got, want = compare(
        probes.dynamic_net_forward_backward, seed=seed, device=device, dtype=dtype, dims=DIMS, n=11
    )
    for depth, (output, expected) in enumerate(zip(got["outputs"], want["outputs"], strict=True)):
        assert_tensor_close(
            output, expected, what=f"DynamicNet output with num_middle={depth}", hint=FORWARD_HINT
        )


@pytest.mark.points(4)
def test_shared_weights_accumulate_gradients(compare, seed, device):
    """DynamicNet: every use of middle_linear adds to its gradient, as in the reference"""
    got, want = compare(
        probes.dynamic_net_forward_backward,
        seed=seed,
        device=device,
        dtype="float64",
        dims=DIMS,
        n=11,
    )
    for depth, (grads, expected) in enumerate(zip(got["grads"], want["grads"], strict=True)):
        for name, value in expected.items():
            if value is None:
                assert grads.get(name) is None, (
                    f"with num_middle={depth}, {name}.grad should be None (the layer did not run)."
                )
                continue
            assert grads.get(name) is not None, (
                f"with num_middle={depth}, {name} got no gradient.\nHint: {FORWARD_HINT}"
            )
            assert_tensor_close(
                grads[name],
                value,
                what=f"gradient of {name} with num_middle={depth}",
                hint="the same middle_linear runs num_middle times; autograd sums the "
                "gradients of every use. " + FORWARD_HINT,
            )


@pytest.mark.points(3)
def test_sample_num_middle(compare, seed):
    """sample_num_middle: draws the depth from the given generator, once per call"""
    got, want = compare(probes.sample_num_middle, seed=seed, draws=40)
    assert got["types"] == ["int"], f"sample_num_middle returned {got['types']}, expected int."
    assert got["values"] == want["values"], (
        f"sample_num_middle gave {got['values'][:10]}..., expected {want['values'][:10]}...\n"
        "Hint: return rng.randint(0, 3), using the random.Random you are given (both ends "
        "included), not the global `random` module or torch's generator."
    )
    assert got["next_draw"] == pytest.approx(want["next_draw"]), (
        "the generator is in a different state after the calls: draw exactly once per call."
    )


def _train(compare, seed, device, dtype, steps):
    return compare(
        probes.train_dynamic_net,
        seed=seed,
        device=device,
        dtype=dtype,
        dims=DIMS,
        n=29,
        lr=1e-3,
        steps=steps,
    )


@pytest.mark.points(4)
@pytest.mark.parametrize(
    ("dtype", "steps"),
    [
        pytest.param("float32", 6, id="float32-6steps"),
        pytest.param("float64", 30, id="float64-30steps"),
    ],
)
def test_train_losses(compare, seed, device, dtype, steps):
    """train_dynamic_net: the losses of every step match the reference"""
    got, want = _train(compare, seed, device, dtype, steps)
    assert got["losses"] is not None, probes.no_losses_message(got, "train_dynamic_net")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="losses returned by train_dynamic_net",
        dtype=getattr(torch, dtype),
        hint=TRAIN_HINT,
    )
    item_types = set(got["loss_item_types"])
    assert got["losses_type"] == "list" and item_types and item_types <= FLOAT_TYPE_NAMES, (
        f"train_dynamic_net returned a {got['losses_type']} of "
        f"{', '.join(got['loss_item_types'])}, expected a list of Python floats (loss.item())."
    )


@pytest.mark.points(3)
def test_train_final_weights_and_generator(compare, seed, device):
    """train_dynamic_net: the trained weights and the generator's state match the reference"""
    got, want = _train(compare, seed, device, "float64", 20)
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key], want["state"][key], what=f"{key} after training", hint=TRAIN_HINT
        )
    assert got["next_draw"] == pytest.approx(want["next_draw"]), (
        "after training, the rng you were given is in a different state than the reference's: "
        "draw exactly one depth per step from it."
    )
