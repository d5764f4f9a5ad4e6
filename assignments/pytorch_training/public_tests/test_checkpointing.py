"""Public tests of part `checkpointing`: keep_best and load_model."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import two_layer_net

from grader.student.fixtures import public_fixture
from grader.testing import assert_tensor_close


@public_fixture
def expected(reference: ModuleType) -> dict[str, Any]:
    """What the reference keeps over six epochs' accuracies, and the kept model's outputs."""
    torch.manual_seed(4021)
    model = two_layer_net(16)
    accuracies = [0.5, 0.75, 0.625, 0.75, 0.875, 0.25]
    best = float("-inf")
    returned = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "best.pt"
        for accuracy in accuracies:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(0.1)
            best = reference.keep_best(model, accuracy, best, path)
            returned.append(best)
        kept = torch.load(path, weights_only=True)
    x = torch.rand(10, 64, generator=torch.Generator().manual_seed(4022))
    fresh = two_layer_net(16)
    fresh.load_state_dict(kept)
    fresh.eval()
    with torch.no_grad():
        outputs = fresh(x)
    return {
        "accuracies": accuracies,
        "returned": returned,
        "kept": dict(kept),
        "x": x,
        "outputs": outputs,
    }


@pytest.mark.points(3)
def test_keep_best_matches_the_fixture(
    part: ModuleType, expected: dict[str, Any], tmp_path: Path
) -> None:
    """keep_best: the returned bests and the kept weights match the expected ones"""
    torch.manual_seed(4021)
    model = two_layer_net(16)
    path = tmp_path / "best.pt"
    best = float("-inf")
    returned = []
    for accuracy in expected["accuracies"]:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.1)
        best = part.keep_best(model, accuracy, best, path)
        returned.append(best)
    assert returned == expected["returned"]
    kept = torch.load(path, weights_only=True)
    assert sorted(kept) == sorted(expected["kept"])
    for key, value in expected["kept"].items():
        assert_tensor_close(
            kept[key], value, what=f"'{key}' in the kept file", hint="Keep the first best epoch."
        )


@pytest.mark.points(2)
def test_load_model_matches_the_fixture(
    part: ModuleType, expected: dict[str, Any], tmp_path: Path
) -> None:
    """load_model: the loaded net computes the expected outputs, in eval mode"""
    path = tmp_path / "best.pt"
    torch.save(expected["kept"], path)
    model = part.load_model(path, two_layer_net(16))
    assert not model.training, "load_model must return the model in eval mode."
    with torch.no_grad():
        outputs = model(expected["x"])
    assert_tensor_close(outputs, expected["outputs"], what="the loaded model's outputs")
