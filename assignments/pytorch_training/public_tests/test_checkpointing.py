"""Public tests of part `checkpointing`: keep_best and load_model."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from conftest import two_layer_net

from grader.testing import assert_tensor_close


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
