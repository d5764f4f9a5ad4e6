"""Hidden tests of part `checkpointing` (30 points): state_dicts, checkpoints and resuming."""

from __future__ import annotations

import probes
import pytest
import torch

from grader.testing import StudentFailure, assert_losses_close, assert_tensor_close

DIMS = [13, 11, 4]
N = 17
LR = 0.01
CHECKPOINT_KEYS = ["losses", "model", "optimizer", "step"]
SAVE_HINT = (
    "torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), "
    "'step': step, 'losses': losses}, path): state_dicts hold only tensors and plain values, "
    "so the file loads with torch.load(path, weights_only=True); a whole model or optimizer "
    "object does not."
)
LOAD_HINT = (
    "checkpoint = torch.load(path, map_location=<the model's device>, weights_only=True); "
    "model.load_state_dict(checkpoint['model']); optimizer.load_state_dict("
    "checkpoint['optimizer']); return checkpoint['step'], checkpoint['losses']."
)
RESUME_HINT = (
    "Load the checkpoint with load_checkpoint (model *and* optimizer: Adam's moment estimates "
    "and step count are part of the training state), then train from the saved step up to "
    "total_steps with the contract's step (mse_loss, record loss.item(), zero_grad, backward, "
    "step), and return the saved losses followed by the new ones."
)


@pytest.mark.points(5)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_weights_round_trip(compare, seed, device, dtype):
    """save_weights then load_weights: the second model computes what the first did"""
    got, want = compare(
        probes.weights_round_trip, seed=seed, device=device, dtype=dtype, dims=DIMS, n=N
    )
    assert not got["load_error"], (
        "torch.load(path, weights_only=True) could not read the file save_weights wrote "
        f"({got['load_error']}).\nHint: save model.state_dict(), not the model object."
    )
    assert got["saved_keys"] == want["saved_keys"], (
        f"save_weights saved {got['saved_type']} with keys {got['saved_keys']}, expected "
        f"the model's state_dict (keys {want['saved_keys']})."
    )
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key],
            want["state"][key],
            what=f"{key} after load_weights",
            hint="load the saved state_dict into the model you are given (model.load_state_dict).",
        )
    assert_tensor_close(got["output"], want["output"], what="the loaded model's output")
    assert got["returned_same_model"], "load_weights must return the model it was given."


@pytest.mark.counts_after("test_weights_round_trip")
@pytest.mark.points(3)
def test_load_weights_runs_no_code(compare, seed, device):
    """load_weights: refuses a file whose unpickling would run code (weights_only=True)"""
    try:
        got, want = compare(
            probes.load_weights_refuses_code, seed=seed, device=device, dtype="float32", dims=DIMS
        )
    except StudentFailure as failure:
        if failure.exit_status != probes.CODE_RAN_EXIT_STATUS:
            raise
        raise AssertionError(
            "load_weights ran code hidden in the file it loaded (here, code that ended the "
            "process): a checkpoint from the internet could do anything on your machine. Load "
            "with torch.load(path, weights_only=True), which only rebuilds tensors and plain "
            "containers."
        ) from None
    assert want["refused"]
    assert got["refused"] and got["error"] == want["error"], (
        f"load_weights on a file holding more than tensors raised {got['error'] or 'nothing'}; "
        f"expected the {want['error']} of torch.load(path, weights_only=True)."
    )
    for key, value in want["state"].items():
        assert_tensor_close(
            got["state"][key],
            value,
            what=f"{key} after load_weights refused the file",
            hint="leave the model unchanged when the file cannot be loaded safely.",
        )


def _checkpoint_args(seed, device, dtype, steps):
    return {
        "seed": seed,
        "device": device,
        "dtype": dtype,
        "dims": DIMS,
        "n": N,
        "lr": LR,
        "steps": steps,
    }


@pytest.mark.points(5)
def test_save_checkpoint(compare, seed, device):
    """save_checkpoint: the file holds the model's and optimizer's state, the step and the losses"""
    got, want = compare(probes.save_checkpoint, **_checkpoint_args(seed, device, "float64", 4))
    assert want["keys"] == CHECKPOINT_KEYS
    assert not got["load_error"], (
        "torch.load(path, weights_only=True) could not read the checkpoint "
        f"({got['load_error']}).\nHint: {SAVE_HINT}"
    )
    assert got["keys"] == want["keys"], (
        f"the checkpoint is a {got['saved_type']} with keys {got['keys']}, expected a dict "
        f"with keys {want['keys']}.\nHint: {SAVE_HINT}"
    )
    assert isinstance(got["model"], dict), f"checkpoint['model'] is a {got['model']}.\n{SAVE_HINT}"
    assert sorted(got["model"]) == sorted(want["model"]), SAVE_HINT
    for key in want["model"]:
        assert_tensor_close(
            got["model"][key], want["model"][key], what=f"checkpoint['model'][{key!r}]"
        )
    assert isinstance(got["optimizer"], dict), (
        f"checkpoint['optimizer'] is a {got['optimizer']}.\nHint: {SAVE_HINT}"
    )
    assert got["optimizer"]["param_groups"] == want["optimizer"]["param_groups"], (
        "checkpoint['optimizer'] is not the optimizer's state_dict().\nHint: " + SAVE_HINT
    )
    for index, entry in want["optimizer"]["state"].items():
        for name, value in entry.items():
            assert_tensor_close(
                got["optimizer"]["state"].get(index, {}).get(name),
                value,
                what=f"checkpoint['optimizer']['state'][{index}][{name!r}]",
                hint=SAVE_HINT,
            )
    assert got["step"] == want["step"], (
        f"checkpoint['step'] is {got['step']}, expected {want['step']}."
    )
    assert_losses_close(got["losses"], want["losses"], what="checkpoint['losses']")


@pytest.mark.points(5)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_load_checkpoint(compare, seed, device, dtype):
    """load_checkpoint: restores model and optimizer state, returns step and losses"""
    got, want = compare(probes.load_checkpoint, **_checkpoint_args(seed, device, dtype, 5))
    assert got["result_type"] == "tuple" and got["step"] is not None, (
        f"load_checkpoint returned a {got['result_type']} (step: {got['step_type']}), expected "
        f"a tuple (step, losses) with step an int.\nHint: {LOAD_HINT}"
    )
    assert got["step"] == want["step"], (
        f"load_checkpoint returned step {got['step']}, expected {want['step']}."
    )
    assert got["losses"] is not None, "load_checkpoint must return the saved losses as a list."
    assert_losses_close(got["losses"], want["losses"], what="losses returned by load_checkpoint")
    for key in want["model"]:
        assert_tensor_close(
            got["model"][key],
            want["model"][key],
            what=f"{key} after load_checkpoint",
            hint=LOAD_HINT,
        )
    for index, entry in want["optimizer"]["state"].items():
        got_entry = got["optimizer"]["state"].get(index)
        assert got_entry is not None, (
            "after load_checkpoint the optimizer has no state (Adam's moment estimates): "
            f"load it too.\nHint: {LOAD_HINT}"
        )
        for name, value in entry.items():
            assert_tensor_close(
                got_entry.get(name),
                value,
                what=f"optimizer state {name!r} of parameter {index}",
                hint=LOAD_HINT,
            )


@pytest.mark.points(6)
@pytest.mark.parametrize(
    ("dtype", "stop_at", "total_steps"),
    [
        pytest.param("float32", 3, 8, id="float32-stop-3-of-8"),
        pytest.param("float64", 10, 25, id="float64-stop-10-of-25"),
    ],
)
def test_resume_reproduces_uninterrupted_training(
    compare, reference, seed, device, dtype, stop_at, total_steps
):
    """resume_training: the losses and weights match those of a run never interrupted"""
    run = {"seed": seed, "device": device, "dtype": dtype, "dims": DIMS, "n": N, "lr": LR}
    got, want = compare(probes.resume_training, **run, stop_at=stop_at, total_steps=total_steps)
    uninterrupted = reference(probes.uninterrupted_training, **run, total_steps=total_steps)
    assert_losses_close(
        want["losses"], uninterrupted, what="reference", dtype=getattr(torch, dtype)
    )
    assert got["losses"] is not None, probes.no_losses_message(got, "resume_training")
    assert_losses_close(
        got["losses"],
        want["losses"],
        what=f"losses of resume_training (stopped after step {stop_at})",
        dtype=getattr(torch, dtype),
        hint=RESUME_HINT,
    )
    for key in want["state"]:
        assert_tensor_close(
            got["state"][key],
            want["state"][key],
            what=f"{key} after resume_training",
            hint=RESUME_HINT,
        )
