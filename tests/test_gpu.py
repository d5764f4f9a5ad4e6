"""The device path: CPU-vs-CUDA behaviour of the grader.

The CUDA tests skip cleanly where no GPU is visible (CI, Gradescope); the CPU halves
always run, so a device-unaware submission is known to pass on CPU and fail on CUDA only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.support import grade_to_report, part_scores

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
pytestmark = pytest.mark.slow


def edit(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    text = path.read_text()
    assert old in text, f"{old!r} not in {name}"
    path.write_text(text.replace(old, new))


@pytest.fixture
def moves_results_to_cpu(reference_copy: Path) -> Path:
    edit(
        reference_copy,
        "manual_backprop.py",
        "return loss, grad_w1, grad_w2",
        "return loss.cpu(), grad_w1.cpu(), grad_w2.cpu()",
    )
    return reference_copy


def test_device_unaware_code_keeps_full_marks_on_cpu(
    moves_results_to_cpu: Path, tmp_path: Path
) -> None:
    process, report, _ = grade_to_report(moves_results_to_cpu, tmp_path, "--device", "cpu")
    assert process.returncode == 0, process.stderr
    assert part_scores(report)["manual_backprop"] == 20


def test_hard_coded_cuda_gets_a_device_hint_on_cpu(reference_copy: Path, tmp_path: Path) -> None:
    edit(
        reference_copy,
        "manual_backprop.py",
        "    h = x @ w1",
        "    x = x.to('cuda')\n    h = x @ w1",
    )
    process, report, _ = grade_to_report(reference_copy, tmp_path, "--device", "cpu")
    assert process.returncode == 0, process.stderr
    scores = part_scores(report)
    assert scores["manual_backprop"] == 0
    assert all(
        score == report["parts"][part]["max_score"]
        for part, score in scores.items()
        if part != "manual_backprop"
    )
    messages = [
        t["message"]
        for t in report["tests"]
        if t["part"] == "manual_backprop" and t["outcome"] == "error"
    ]
    assert messages and all("never hard-code 'cuda'" in m.lower() for m in messages)


def test_asking_for_cuda_without_a_gpu_is_a_usage_error(grader_cli, reference_copy: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    process = grader_cli("grade", reference_copy, "--device", "cuda")
    assert process.returncode == 2
    assert "no CUDA GPU" in process.stderr


@needs_cuda
def test_reference_scores_full_marks_on_cuda(reference_copy: Path, tmp_path: Path) -> None:
    process, report, _ = grade_to_report(reference_copy, tmp_path, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    assert report["device"] == "cuda" and report["environment"]["gpu"]
    assert report["score"] == 100, [t for t in report["tests"] if t["outcome"] != "passed"]
    assert not any(t["outcome"] == "skipped" for t in report["tests"])


@needs_cuda
def test_stubs_score_zero_on_cuda(stub_copy: Path, tmp_path: Path) -> None:
    process, report, _ = grade_to_report(stub_copy, tmp_path, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    assert report["score"] == 0 and report["grader_error"] is None


@needs_cuda
def test_device_unaware_code_is_told_where_it_broke_on_cuda(
    moves_results_to_cpu: Path, tmp_path: Path
) -> None:
    process, report, _ = grade_to_report(moves_results_to_cpu, tmp_path, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    assert part_scores(report)["manual_backprop"] < 20
    messages = "\n".join(t["message"] for t in report["tests"] if t["part"] == "manual_backprop")
    assert "expected the result on cuda:0, got cpu" in messages


@needs_cuda
def test_unsynchronised_timing_fails_on_cuda(reference_copy: Path, tmp_path: Path) -> None:
    edit(
        reference_copy,
        "device_benchmark.py",
        "        torch.cuda.synchronize(device)",
        "        pass",
    )
    process, report, _ = grade_to_report(reference_copy, tmp_path, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    failed = [
        t for t in report["tests"] if t["part"] == "device_benchmark" and t["outcome"] != "passed"
    ]
    assert failed and any("synchronize" in t["message"] for t in failed)


@needs_cuda
def test_lifting_the_gpu_memory_cap_gets_the_job_stopped(
    reference_copy: Path, tmp_path: Path
) -> None:
    """The in-process cap can be raised by student code; the monitor's NVML watchdog cannot."""
    edit(
        reference_copy,
        "manual_backprop.py",
        "    h = x @ w1",
        "    import time\n"
        "    torch.cuda.set_per_process_memory_fraction(1.0, 0)\n"
        "    hog = torch.empty(8 * 2**30, dtype=torch.uint8, device='cuda')\n"
        "    time.sleep(5)\n"
        "    h = x @ w1",
    )
    process, report, _ = grade_to_report(reference_copy, tmp_path, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    assert report["environment"]["sandbox"]["gpu_memory_cap"] == "nvml-watchdog"
    assert part_scores(report)["manual_backprop"] == 0
    messages = "\n".join(t["message"] for t in report["tests"] if t["part"] == "manual_backprop")
    assert "MB of GPU memory and was stopped" in messages
