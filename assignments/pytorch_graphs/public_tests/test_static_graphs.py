"""Public tests of part 2, static_graphs: torch.cond keeps both branches, tracing one."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch

from grader.testing import assert_tensor_close

PART_ID = "static_graphs"
Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@pytest.fixture
def part(load_part: Callable[[str], ModuleType]) -> ModuleType:
    return load_part(PART_ID)


def inputs(seed: int, device: torch.device | str = "cpu") -> Inputs:
    """x (5, 4), w1 and w2 (4, 3), and a second x of the same shape."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(5, 4), (4, 3), (4, 3), (5, 4)]
    x, w1, w2, x_new = (torch.randn(shape, generator=generator).to(device) for shape in shapes)
    return x, w1, w2, x_new


@pytest.mark.points(2)
def test_conditional_picks_the_branch(part: ModuleType, device: torch.device) -> None:
    """conditional uses w1 for z > 0 and w2 for z <= 0, tensor or number"""
    x, w1, w2, _ = inputs(2041, device)
    for z in (torch.tensor(0.5, device=device), 2, torch.tensor(-1.0, device=device), 0.0):
        want = x @ w1 if z > 0 else x @ w2
        assert_tensor_close(part.conditional(x, z, w1, w2), want, what=f"conditional, z={z}")


@pytest.mark.points(2)
def test_conditional_module_runs_eagerly(part: ModuleType) -> None:
    """Conditional()(x, z, w1, w2) picks the branch with torch.cond"""
    x, w1, w2, _ = inputs(2042)
    module = part.Conditional()
    assert_tensor_close(module(x, torch.tensor(1.0), w1, w2), x @ w1, what="z = 1")
    assert_tensor_close(module(x, torch.tensor(-1.0), w1, w2), x @ w2, what="z = -1")


@pytest.mark.points(4)
def test_exported_program_follows_z_at_run_time(part: ModuleType) -> None:
    """export_conditional with a positive z still takes w2 when run with a negative z"""
    x, w1, w2, x_new = inputs(2043)
    program = part.export_conditional(x, torch.tensor(2.0), w1, w2)
    assert isinstance(program, torch.export.ExportedProgram)
    run = program.module()
    assert_tensor_close(run(x_new, torch.tensor(3.0), w1, w2), x_new @ w1, what="z = 3")
    assert_tensor_close(run(x_new, torch.tensor(-3.0), w1, w2), x_new @ w2, what="z = -3")
    conds = [n for n in program.graph.nodes if n.target is torch.ops.higher_order.cond]
    assert len(conds) == 1, f"the exported graph holds {len(conds)} torch.cond nodes, expected 1"


@pytest.mark.points(4)
def test_traced_program_freezes_one_branch(part: ModuleType) -> None:
    """trace_conditional keeps the branch z chose and refuses another z"""
    x, w1, w2, x_new = inputs(2044)
    program = part.trace_conditional(x, -1.0, w1, w2)
    assert isinstance(program, torch.export.ExportedProgram)
    run = program.module()
    assert_tensor_close(run(x_new, -1.0, w1, w2), x_new @ w2, what="the traced z = -1")
    with pytest.raises(Exception, match="z"):
        run(x_new, 1.0, w1, w2)
