"""Hidden tests of part `static_graphs` (25 points): torch.cond and torch.export."""

from __future__ import annotations

import probes
import pytest

from grader.testing import assert_tensor_close

SIZES = {"n": 7, "d_in": 13, "d_out": 5}
Z_VALUES = [1.5, -0.5, 0.0, 3.0]
CONDITIONAL_HINT = "Return x @ w1 when z > 0 and x @ w2 otherwise (z == 0 takes w2)."
COND_HINT = (
    "In Conditional.forward use torch.cond(z > 0, true_fn, false_fn, (x, w1, w2)), where "
    "true_fn(x, w1, w2) returns x @ w1 and false_fn(x, w1, w2) returns x @ w2; a Python `if` "
    "cannot be exported, and computing both and choosing with torch.where is not control flow."
)
TRACE_HINT = (
    "trace_conditional exports PythonConditional() with z passed as a Python float "
    "(float(z)): torch.export runs the Python `if` once, on that value, keeps only the branch "
    "it took, and guards the program against any other z."
)


@pytest.mark.points(4)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conditional_eager(compare, seed, device, dtype):
    """conditional: picks w1 or w2 by the sign of z, for tensor and Python-number z"""
    got, want = compare(
        probes.conditional_eager, seed=seed, device=device, dtype=dtype, z_values=Z_VALUES, **SIZES
    )
    for kind in ("tensor_z", "float_z"):
        for z, value, expected in zip(Z_VALUES, got[kind], want[kind], strict=True):
            what = f"conditional(x, z={z}, w1, w2) with z a {kind.split('_')[0]}"
            assert_tensor_close(value, expected, what=what, hint=CONDITIONAL_HINT)


@pytest.mark.points(3)
def test_conditional_module_runs_eagerly(compare, seed, device):
    """Conditional: an nn.Module whose torch.cond picks the branch by z when run directly"""
    got, want = compare(
        probes.conditional_module,
        seed=seed,
        device=device,
        dtype="float32",
        z_values=Z_VALUES,
        **SIZES,
    )
    assert got["is_module"], "Conditional must be a subclass of torch.nn.Module."
    for z, value, expected in zip(Z_VALUES, got["outputs"], want["outputs"], strict=True):
        assert_tensor_close(
            value, expected, what=f"Conditional()(x, z={z}, w1, w2)", hint=COND_HINT
        )


def _saved_and_run(compare, judge, reference, probe, *, z_kind, z_values, **run):
    """The student's and the reference's programs, each saved where it was made, then loaded,
    inspected and run where no student code runs: (the student's, the reference's)."""
    got, want = compare(probe, **run)
    function = probe.__name__
    assert got["program"] is not None, (
        f"{function} returned a {got['type']}, which torch.export.save could not save "
        f"({got['error']}): expected the torch.export.ExportedProgram that "
        "torch.export.export returns."
    )
    check = {key: value for key, value in run.items() if key != "z_example"}
    check.update(z_kind=z_kind, z_values=z_values)
    got_run = judge(probes.run_saved_program, program=got["program"], **check)
    want_run = reference(probes.run_saved_program, program=want["program"], **check)
    assert want_run["loaded"], want_run["error"]
    assert got_run["loaded"], (
        f"the program {function} returned was saved, but torch.export.load could not load it "
        f"again ({got_run['error']}): return what torch.export.export returns, unchanged."
    )
    return got_run, want_run


@pytest.mark.points(6)
@pytest.mark.parametrize("z_example", [2.0, -1.0], ids=["exported-with-positive-z", "negative-z"])
def test_export_keeps_both_branches(compare, judge, reference, seed, device, z_example):
    """export_conditional: the exported program follows z at run time, whichever z it saw"""
    got, want = _saved_and_run(
        compare,
        judge,
        reference,
        probes.export_conditional,
        z_kind="tensor",
        z_values=Z_VALUES,
        seed=seed,
        device=device,
        dtype="float32",
        z_example=z_example,
        **SIZES,
    )
    assert want["cond_nodes"] == 1
    for z, run, expected in zip(Z_VALUES, got["runs"], want["runs"], strict=True):
        assert not run["error"], (
            f"the exported program raised {run['error']} when run with z={z}.\nHint: {COND_HINT}"
        )
        assert_tensor_close(
            run["value"],
            expected["value"],
            what=f"the exported program run on new x with z={z} (exported with z={z_example})",
            hint=COND_HINT,
        )


@pytest.mark.counts_after("test_export_keeps_both_branches")
@pytest.mark.points(2)
def test_export_graph_holds_a_cond(compare, judge, reference, seed, device):
    """export_conditional: the graph holds one torch.cond node"""
    got, want = _saved_and_run(
        compare,
        judge,
        reference,
        probes.export_conditional,
        z_kind="tensor",
        z_values=[1.0],
        seed=seed,
        device=device,
        dtype="float64",
        z_example=1.0,
        **SIZES,
    )
    assert got["cond_nodes"] == want["cond_nodes"], (
        f"the exported graph holds {got['cond_nodes']} torch.cond nodes, expected "
        f"{want['cond_nodes']}.\nHint: {COND_HINT}"
    )


@pytest.mark.points(6)
@pytest.mark.parametrize("z_example", [2.0, -1.0], ids=["traced-with-positive-z", "negative-z"])
def test_trace_freezes_one_branch(compare, judge, reference, seed, device, z_example):
    """trace_conditional: the program computes the traced branch and refuses any other z"""
    got, want = _saved_and_run(
        compare,
        judge,
        reference,
        probes.trace_conditional,
        z_kind="float",
        z_values=[z_example, -z_example],
        seed=seed,
        device=device,
        dtype="float32",
        z_example=z_example,
        **SIZES,
    )
    same, other = got["runs"]
    want_same, want_other = want["runs"]
    assert not want_same["error"] and want_other["error"]
    assert not same["error"], (
        f"the traced program raised {same['error']} when run with the z it was traced with "
        f"({z_example}).\nHint: {TRACE_HINT}"
    )
    assert_tensor_close(
        same["value"],
        want_same["value"],
        what=f"the traced program run on new x with z={z_example}",
        hint=TRACE_HINT,
    )
    assert other["error"], (
        f"the program traced with z={z_example} accepted z={-z_example}: it should hold only "
        f"the branch taken while tracing and fail its guard for another z.\nHint: {TRACE_HINT}"
    )


@pytest.mark.counts_after("test_trace_freezes_one_branch")
@pytest.mark.points(2)
def test_trace_graph_holds_one_matmul_and_no_cond(compare, judge, reference, seed, device):
    """trace_conditional: the graph holds one matrix multiply and no torch.cond"""
    got, want = _saved_and_run(
        compare,
        judge,
        reference,
        probes.trace_conditional,
        z_kind="float",
        z_values=[1.0],
        seed=seed,
        device=device,
        dtype="float64",
        z_example=1.0,
        **SIZES,
    )
    assert (got["cond_nodes"], got["matmul_nodes"]) == (want["cond_nodes"], want["matmul_nodes"]), (
        f"the traced graph holds {got['cond_nodes']} torch.cond and {got['matmul_nodes']} "
        f"matrix-multiply nodes, expected {want['cond_nodes']} and {want['matmul_nodes']}.\n"
        f"Hint: {TRACE_HINT}"
    )
