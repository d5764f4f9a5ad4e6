from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import load_assignment, parse_manifest
from grader.errors import ConfigError


def test_the_manifest_matches_the_assignment_contract() -> None:
    assignment = load_assignment(None)
    assert assignment.id == "pytorch_basics"
    assert {p.id: (p.file, p.points) for p in assignment.parts} == {
        "manual_backprop": ("manual_backprop.py", 20),
        "autograd_loop": ("autograd_loop.py", 15),
        "custom_sigmoid": ("custom_sigmoid.py", 20),
        "two_layer_net": ("two_layer_net.py", 20),
        "dataloader_training": ("dataloader_training.py", 15),
        "device_benchmark": ("device_benchmark.py", 10),
    }
    assert assignment.max_score == 100
    assert assignment.hidden_tests_dir.is_dir()


def test_unknown_assignment_lists_the_available_ones() -> None:
    with pytest.raises(ConfigError, match="available: pytorch_basics"):
        load_assignment("nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[assignment]\nid='a'\n", "at least one"),
        ("[assignment]\nid='a'\n[[parts]]\nid='p'\nfile='../x.py'\npoints=1\n", "plain .py"),
        ("[assignment]\nid='a'\n[[parts]]\nid='p'\n", "id, file and points"),
        ("[assignment]\n[[parts]]\nid='p'\nfile='p.py'\npoints=1\n[limits]\nbogus=1\n", "limits"),
        (
            "[assignment]\n[[parts]]\nid='p'\nfile='p.py'\npoints=1\n[visibility]\nhidden='x'\n",
            "visibility",
        ),
        ("not toml [", "cannot read"),
    ],
)
def test_bad_manifests_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "a" / "assignment.toml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        parse_manifest(path)
    assert str(path) in str(caught.value)
