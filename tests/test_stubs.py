"""The solution markers: a reference in, the students' stub out (grader/authoring/stubs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring.stubs import course_line_length, has_markers, make_stub
from grader.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]

REFERENCE = '''\
"""Part `demo`: what the student reads."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # SOLUTION
from torch import nn

# How many times; only the solution needs it.
REPEATS = 2  # SOLUTION


def _helper(x: torch.Tensor) -> torch.Tensor:  # SOLUTION
    return F.relu(x)


def double(x: torch.Tensor) -> torch.Tensor:
    """Return 2 * x."""
    # BEGIN SOLUTION
    return _helper(x) * REPEATS
    # END SOLUTION


class Net(nn.Module):
    """A net."""

    def __init__(self) -> None:
        super().__init__()
        # BEGIN SOLUTION: create self.linear
        self.linear = nn.Linear(2, 2)
        # END SOLUTION

    @staticmethod  # SOLUTION
    def _private() -> int:
        return 1
'''

STUB = '''\
"""Part `demo`: what the student reads."""

from __future__ import annotations

import torch
from torch import nn


def double(x: torch.Tensor) -> torch.Tensor:
    """Return 2 * x."""
    raise NotImplementedError("double: not implemented yet (see its docstring)")


class Net(nn.Module):
    """A net."""

    def __init__(self) -> None:
        super().__init__()
        raise NotImplementedError("Net.__init__: create self.linear")
'''


def test_functions_methods_and_private_helpers() -> None:
    assert make_stub(REFERENCE) == STUB


def test_a_block_at_module_level_is_left_out_with_its_blank_lines() -> None:
    reference = "import torch\n\n# BEGIN SOLUTION\nSCALE = 3\n# END SOLUTION\n\n\ndef f() -> int:\n"
    assert (
        make_stub(reference + "    return 1\n")
        == "import torch\n\n\ndef f() -> int:\n    return 1\n"
    )


def test_a_long_raise_is_wrapped_as_ruff_format_wraps_it() -> None:
    reference = (
        "class Conditional:\n"
        "    def forward(self) -> None:\n"
        "        # BEGIN SOLUTION\n"
        "        pass\n"
        "        # END SOLUTION\n"
    )
    message = "Conditional.forward: not implemented yet (see its docstring)"
    assert make_stub(reference, line_length=100) == reference.replace(
        "        # BEGIN SOLUTION\n        pass\n        # END SOLUTION\n",
        f'        raise NotImplementedError("{message}")\n',
    )
    assert make_stub(reference, line_length=60).endswith(
        f'        raise NotImplementedError(\n            "{message}"\n        )\n'
    )


def test_quotes_in_the_message_are_escaped() -> None:
    reference = 'def f() -> None:\n    # BEGIN SOLUTION: say "hi"\n    pass\n    # END SOLUTION\n'
    assert (
        make_stub(reference)
        == 'def f() -> None:\n    raise NotImplementedError("f: say \\"hi\\"")\n'
    )


def test_a_marker_inside_a_string_is_text() -> None:
    reference = 'def f() -> str:\n    return """\n# BEGIN SOLUTION\n"""\n'
    assert not has_markers(reference)
    assert make_stub(reference) == reference


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("def f():\n    # BEGIN SOLUTION\n    pass\n", "line 2: BEGIN SOLUTION is never closed"),
        ("def f():\n    pass\n    # END SOLUTION\n", "line 3: END SOLUTION without a BEGIN"),
        (
            "def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    pass\n    # END SOLUTION\n",
            "line 3: BEGIN SOLUTION inside the block begun on line 2",
        ),
        ("def f():\n    # BEGIN SOLUTIONS\n    pass\n    # END SOLUTION\n", "line 2: write"),
        ("x = (\n    1  # SOLUTION\n)\n", "line 2: `# SOLUTION` marks a statement on its first"),
        ("if True:  # SOLUTION\n    # BEGIN SOLUTION\n    x = 1\n    # END SOLUTION\n", "line 2"),
        ("class A:\n    x = 1  # SOLUTION\n", "its stub would not be valid Python"),
        ("def f(:\n", "cannot be parsed"),
    ],
)
def test_misplaced_markers_are_refused_with_the_line(reference: str, says: str) -> None:
    with pytest.raises(ConfigError, match=None) as raised:
        make_stub(reference, where="solutions/demo/part.py")
    assert "solutions/demo/part.py" in str(raised.value)
    assert says in str(raised.value)


def test_the_line_length_comes_from_the_courses_pyproject(tmp_path: Path) -> None:
    assert course_line_length(tmp_path) == 88
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n", encoding="utf-8")
    assert course_line_length(tmp_path) == 120
    assert course_line_length(REPO) == 100


@pytest.mark.parametrize(
    "assignment", ["pytorch_basics", "pytorch_graphs", "pytorch_losses", "pytorch_training"]
)
def test_every_bundled_stub_is_generated_from_its_reference(assignment: str) -> None:
    from grader.course.manifest import load_assignment

    loaded = load_assignment(assignment, root=REPO / "assignments")
    for part in loaded.parts:
        reference = (loaded.solutions_dir / part.file).read_text(encoding="utf-8")
        assert has_markers(reference), part.file
        stub = (loaded.directory / part.file).read_text(encoding="utf-8")
        assert make_stub(reference, line_length=100) == stub, part.file
