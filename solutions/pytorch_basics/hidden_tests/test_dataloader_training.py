"""Hidden tests of part `dataloader_training` (15 points): DataLoader, training, evaluation."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.testing import (
    FLOAT_TYPE_NAMES,
    assert_losses_close,
    assert_runs_on_gpu,
    assert_scalar_close,
    assert_tensor_close,
)

DIMS = {"d_in": 5, "d_out": 3}
NET = {"n": 37, "d_in": 13, "h": 11, "d_out": 3, "batch_size": 8}  # last batch holds 5


# make_loader's own seeded comparisons, so a right make_loader keeps its points whatever
# train_with_loader and evaluate do. A loader's batches are its inputs cut in order: a probe
# rewritten in the student's process to answer them cuts the inputs itself, which is
# make_loader's work, so they open make_loader's own checks only (its shuffle check).
@pytest.mark.points(1)
@pytest.mark.parametrize(
    ("n", "batch_size"), [pytest.param(37, 8, id="37-by-8"), pytest.param(23, 5, id="23-by-5")]
)
def test_make_loader_batches(compare, seed, device, n, batch_size):
    """make_loader: honours batch_size, keeps the order with shuffle=False, keeps the last batch"""
    got, want = compare(
        probes.make_loader_batches,
        seed=seed,
        device=device,
        dtype="float32",
        n=n,
        batch_size=batch_size,
        **DIMS,
    )
    assert got["is_dataloader"], "make_loader must return a torch.utils.data.DataLoader."
    assert got["sizes"] == want["sizes"], (
        f"make_loader(x, y, batch_size={batch_size}) over {n} samples gave batches of sizes "
        f"{got['sizes']}, expected {want['sizes']}. Pass batch_size to the DataLoader and "
        "keep the smaller last batch (drop_last=False)."
    )
    assert got["len"] == want["len"], f"len(loader) is {got['len']}, expected {want['len']}."
    hint = (
        "Build the loader over TensorDataset(x, y) so each batch is (x_batch, y_batch), in "
        "the original order when shuffle=False."
    )
    assert_tensor_close(got["x"], want["x"], what="the x batches, concatenated", hint=hint)
    assert_tensor_close(got["y"], want["y"], what="the y batches, concatenated", hint=hint)
    assert got["second_epoch_same"], (
        "iterating the loader a second time gave different batches with shuffle=False."
    )


@pytest.mark.points(1)
def test_make_loader_defaults(compare, seed, device):
    """make_loader: defaults to batch_size=8 and shuffle=False"""
    got, want = compare(
        probes.make_loader_defaults, seed=seed, device=device, dtype="float32", n=20, **DIMS
    )
    assert got["sizes"] == want["sizes"], (
        f"make_loader(x, y) over 20 samples gave batches of sizes {got['sizes']}, expected "
        f"{want['sizes']}: the default batch_size is 8."
    )
    assert got["orders"] == want["orders"], (
        "make_loader(x, y) shuffled the samples; the default is shuffle=False."
    )
    hint = "Build the loader over TensorDataset(x, y) so each batch is (x_batch, y_batch)."
    assert_tensor_close(got["x"], want["x"], what="the x batches, concatenated", hint=hint)
    assert_tensor_close(got["y"], want["y"], what="the y batches, concatenated", hint=hint)


# The orders are drawn in the student's process (a shuffled order is the DataLoader's to
# choose): the check counts once make_loader's seeded comparisons pass.
@pytest.mark.self_reported
@pytest.mark.counts_after("test_make_loader_batches", "test_make_loader_defaults")
@pytest.mark.points(2)
def test_make_loader_shuffles(student, seed, device):
    """make_loader: shuffle=True visits every sample once per epoch in a new random order"""
    n = 37
    got = student(
        probes.make_loader_shuffle,
        seed=seed,
        device=device,
        dtype="float32",
        n=n,
        batch_size=8,
        **DIMS,
    )
    for epoch, order in enumerate(got["orders"]):
        assert sorted(order) == list(range(n)), (
            f"with shuffle=True, epoch {epoch} did not visit each of the {n} samples exactly "
            "once. Pass shuffle to the DataLoader rather than shuffling x and y yourself."
        )
    assert got["sizes"][0] == [8, 8, 8, 8, 5], (
        f"with shuffle=True the batch sizes are {got['sizes'][0]}, expected [8, 8, 8, 8, 5]."
    )
    first, second = got["orders"]
    assert first != list(range(n)), (
        "make_loader(..., shuffle=True) kept the original order: pass shuffle=shuffle to "
        "the DataLoader."
    )
    assert first != second, (
        "make_loader(..., shuffle=True) used the same order in two epochs: the DataLoader "
        "must reshuffle every epoch (DataLoader(..., shuffle=True) does)."
    )


TRAIN_HINT = (
    "For each epoch and each (x_batch, y_batch): loss = F.mse_loss(model(x_batch), y_batch), "
    "record loss.item(), optimizer.zero_grad(), loss.backward(), optimizer.step(). Use the "
    "optimizer you were given (do not create a new one) and return one loss per batch."
)


def _train(compare, seed, device, dtype, epochs):
    return compare(
        probes.train_with_loader,
        seed=seed,
        device=device,
        dtype=dtype,
        lr=0.05,
        epochs=epochs,
        **NET,
    )


@pytest.mark.points(2)
@pytest.mark.parametrize(
    ("dtype", "epochs"),
    [
        pytest.param("float32", 2, id="float32-2epochs"),
        pytest.param("float64", 6, id="float64-6epochs"),
    ],
)
def test_train_with_loader(compare, seed, device, dtype, epochs):
    """train_with_loader: per-batch losses and trained weights match the reference"""
    got, want = _train(compare, seed, device, dtype, epochs)
    assert got["losses"] is not None, probes.no_losses_message(got, "train_with_loader")
    assert len(got["losses"]) == len(want["losses"]), (
        f"train_with_loader returned {len(got['losses'])} losses for {epochs} epochs of "
        f"{want['n_batches']} batches, expected {len(want['losses'])} (one per batch)."
    )
    assert_losses_close(
        got["losses"],
        want["losses"],
        what="per-batch losses returned by train_with_loader",
        dtype=getattr(torch, dtype),
        hint=TRAIN_HINT,
    )
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key],
            want["state"][key],
            what=f"{key} after train_with_loader",
            hint=TRAIN_HINT,
        )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_train_with_loader")
@pytest.mark.points(1)
def test_train_with_loader_training_mode(compare, seed, device):
    """train_with_loader: puts the model in training mode and returns Python floats"""
    got, _ = _train(compare, seed, device, "float32", 1)
    assert got["forward_calls"] > 0, "train_with_loader never called the model."
    assert got["all_training"], (
        "train_with_loader ran the model in eval mode: call model.train() at the start (the "
        "model may arrive in eval mode, e.g. after evaluate())."
    )
    item_types = set(got["loss_item_types"])
    assert got["losses_type"] == "list" and item_types and item_types <= FLOAT_TYPE_NAMES, (
        f"train_with_loader returned a {got['losses_type']} of "
        f"{', '.join(got['loss_item_types'])}, expected a list of Python floats (loss.item())."
    )


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_evaluate_matches(compare, seed, device, dtype):
    """evaluate: the mean squared error over all samples matches the reference"""
    got, want = compare(probes.evaluate, seed=seed, device=device, dtype=dtype, **NET)
    assert_scalar_close(
        got["value"],
        want["value"],
        what=f"evaluate(model, loader) over 37 samples in batches of 8 ({dtype})",
        rel_tol=1e-5 if dtype == "float32" else 1e-9,
        hint="Average over every element of every sample: sum the squared errors over all "
        "batches (F.mse_loss(..., reduction='sum')) and divide by the total number of "
        "elements. The mean of the per-batch means is wrong when the last batch is smaller.",
    )


@pytest.mark.self_reported
@pytest.mark.counts_after("test_evaluate_matches")
@pytest.mark.points(1)
def test_evaluate_eval_mode_no_grad(compare, seed, device):
    """evaluate: runs the model in eval mode without building a graph, returns a float"""
    got, _ = compare(probes.evaluate, seed=seed, device=device, dtype="float32", **NET)
    assert got["forward_calls"] > 0, "evaluate never called the model."
    assert not got["any_training"], (
        "evaluate ran the model in training mode: call model.eval() first (dropout and batch "
        "norm behave differently in training mode)."
    )
    assert not got["any_grad"], (
        "evaluate ran the model with gradients enabled: wrap the loop in torch.no_grad() "
        "(or torch.inference_mode()) so no graph is built."
    )
    assert not any(got["params_grad"]), (
        "evaluate computed gradients of the model's parameters; evaluation must not call "
        "backward()."
    )
    assert got["value_type"] in FLOAT_TYPE_NAMES, (
        f"evaluate returned a {got['value_type']}, expected a Python float (use .item())."
    )


@pytest.mark.static_rule
@pytest.mark.visibility("visible")
@pytest.mark.points(0)
def test_runs_on_a_gpu_too(student_source):
    """dataloader_training.py: no numpy on tensors, which fails on a GPU (a warning, no points)"""
    assert_runs_on_gpu(student_source, "dataloader_training.py")
