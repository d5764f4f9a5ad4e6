"""Hidden tests of part `checkpointing`: keep the best state_dict, load it into a fresh model.

The kept file is the student's bytes: it is decoded as plain tensors by the `judge` fixture,
where no student code runs (weights_only), never unpickled here.
"""

from __future__ import annotations

import probes
import pytest

from grader.testing import assert_tensor_close

HIDDEN, ROUNDS = 24, 6


@pytest.mark.points(9)
def test_keeps_the_best_state(compare, judge, reference, seed, device):
    """keep_best: the file holds the state_dict of the epoch with the best accuracy"""
    got, want = compare(
        probes.keep_best_file, seed=seed, device=device, hidden=HIDDEN, rounds=ROUNDS
    )
    accuracies = want["accuracies"]
    best_epoch = max(range(ROUNDS), key=lambda epoch: (accuracies[epoch], -epoch))
    assert got["returned"] == want["returned"], (
        f"keep_best returned {got['returned']} over epochs with accuracies {accuracies}; "
        f"expected {want['returned']}: the best accuracy so far, which starts at -inf."
    )
    assert got["file"] is not None, "keep_best never wrote the file at `path`."
    decoded = judge(probes.decode_state, data=got["file"])
    assert decoded["state"] is not None, (
        f"the file keep_best wrote is not a state_dict that torch.load(path, weights_only=True) "
        f"reads ({decoded['error']}): save model.state_dict(), not the model."
    )
    kept = reference(probes.decode_state, data=want["file"])["state"]
    assert sorted(decoded["state"]) == sorted(kept), (
        f"the saved state_dict has keys {sorted(decoded['state'])}; expected {sorted(kept)}."
    )
    for key, value in kept.items():
        assert_tensor_close(
            decoded["state"][key],
            value,
            what=f"'{key}' in the kept checkpoint",
            hint=f"The accuracies were {accuracies}: the file must hold the weights of epoch "
            f"{best_epoch} (the first best), saved when its accuracy beat every earlier one "
            "and never overwritten by a worse epoch.",
        )


@pytest.mark.points(6)
def test_load_model(compare, seed, device):
    """load_model: the loaded model computes what the saved one did, in eval mode"""
    got, want = compare(probes.load_model_outputs, seed=seed, device=device, hidden=HIDDEN, n=64)
    assert got["outputs"] is not None, (
        f"load_model returned a {got['type']}: expected the model it was given, loaded."
    )
    if got["training"]:
        raise AssertionError(
            "the model load_model returned is in train mode, so its dropout changes the "
            "outputs: call model.eval() after load_state_dict."
        )
    assert_tensor_close(
        got["outputs"],
        want["outputs"],
        what="the loaded model's outputs",
        hint="model.load_state_dict(torch.load(path, weights_only=True)), then model.eval().",
    )
