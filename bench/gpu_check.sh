#!/usr/bin/env bash
# The GPU check: the CUDA path end to end, on a machine with a CUDA GPU (`make gpu-check`).
#
#   PYTHON=python3 OUT=out/gpu-check bash bench/gpu_check.sh
#
# Each step is bounded and runs whatever the one before it did; everything goes to
# $OUT/gpu-check.log, and each reference's report.json beside it. Steps, most telling first:
# the card and its matmul TFLOP/s (fp32 without TF32, TF32, fp16, bf16: device_benchmark's
# plausibility bounds are checked against these), CUDA in a forked child with each of the
# sandbox's walls added in turn, one sandbox job on CUDA with what a set-up
# failure leaves (the zygote's log, the job's stderr), each assignment's reference graded with
# --device cuda (full marks expected), tests/test_gpu.py (stubs 0, a device-unaware
# submission's hint, an unsynchronised timing, CUDA errors costing one test, the memory
# watchdog), and bench/bench_grade.py --device cuda (grade against the floor on the GPU).
set -u
PY=${PYTHON:-python3}
OUT=${OUT:-out/gpu-check}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
export PYTHONUNBUFFERED=1
# A longer per-test limit than the manifests' for a first CUDA initialisation in each test.
export GRADER_TEST_TIMEOUT_S=${GRADER_TEST_TIMEOUT_S:-120}

step() {  # step SECONDS NAME COMMAND...: run bounded, log its output and exit status
    local seconds=$1 name=$2
    shift 2
    echo "=== $name (at most ${seconds} s)" | tee -a "$LOG"
    local started=$SECONDS
    timeout --kill-after=10 "$seconds" "$@" >>"$LOG" 2>&1
    local status=$?
    echo "=== $name: exit $status after $((SECONDS - started)) s" | tee -a "$LOG"
}

: >"$LOG"
step 60 "the card and its matmul TFLOP/s" "$PY" - <<'PY'
import time
import torch

print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
    n = 8192
    for label, dtype, tf32 in [
        ("fp32, TF32 off", torch.float32, False),
        ("fp32, TF32 on", torch.float32, True),
        ("fp16", torch.float16, False),
        ("bf16", torch.bfloat16, False),
    ]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        repeats = 20
        started = time.perf_counter()
        for _ in range(repeats):
            a @ b
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - started) / repeats
        print(f"matmul {n}: {label}: {2 * n**3 / seconds / 1e12:.1f} TFLOP/s")
PY
step 120 "cuda in a child, layer by layer (which wall a job's set-up fails at)" "$PY" - <<'PY'
# A job initialises CUDA in a process forked from one that imported torch, as the sandbox
# uid, under Landlock and seccomp. Each layer is added in a fresh interpreter of its own, so
# the first that fails names the wall: the device files' permissions, the uid, a path
# Landlock does not grant, a call seccomp refuses.
import os
import subprocess
import sys
import sysconfig

print(subprocess.run("ls -l /dev/nvidia* 2>&1; id", shell=True, capture_output=True, text=True).stdout)
CHILD = r"""
import importlib.util, os, sys, sysconfig
import torch
layers = sys.argv[1].split(",")
pid = os.fork()
if pid:
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
try:
    # What the server lets a job read (server.py: CONFINED_SYSTEM_DIRS and state.keep).
    system = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/proc", "/sys"]
    keep = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(torch.__file__))]
    keep += [sysconfig.get_path(n) for n in ("stdlib", "platstdlib", "purelib", "platlib")]
    spec = importlib.util.spec_from_file_location("confine", "grader/sandbox/confine.py")
    confine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(confine)
    if "uid" in layers:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    if "confine" in layers:
        print("confine:", confine.confine(read=system + keep, write=["/tmp", "/dev/shm"]))
    print("device:", torch.cuda.get_device_properties(0).name, flush=True)
    x = torch.ones(4, device="cuda")
    print("sum on cuda:", float((x @ x).item()), flush=True)
except BaseException as error:
    import traceback
    traceback.print_exc()
    os._exit(3)
os._exit(0)
"""
for layers in ("plain", "uid", "confine", "uid,confine"):
    if "uid" in layers and os.geteuid() != 0:
        print(f"--- {layers}: skipped (not root)")
        continue
    done = subprocess.run(
        [sys.executable, "-c", CHILD, layers], capture_output=True, text=True, timeout=100
    )
    print(f"--- {layers}: exit {done.returncode}")
    print((done.stdout + done.stderr)[-3000:])
PY
step 90 "one sandbox job on cuda, with the zygote's log" "$PY" - <<'PY'
# Where a job's set-up fails, its traceback goes to the zygote's log: grade hides that log
# (its zygote is forked from the worker), so one job is run here with a zygote of its own.
import tempfile
from pathlib import Path

from grader.course.manifest import load_assignment
from grader.grading.grade import GradeSettings, sandbox_settings
from grader.sandbox.client import Sandbox

assignment = load_assignment("pytorch_losses", root=Path("assignments"))
work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
work.chmod(0o711)
files = {p.file: Path("solutions/pytorch_losses") / p.file for p in assignment.parts}
settings = sandbox_settings(assignment, GradeSettings(device="cuda", seed=1), "cuda")
sandbox = Sandbox(settings, {}, work / "sandbox")
try:
    sandbox.start()
    sandbox.use_submission(files, {name: ("torch",) for name in files})
    job = sandbox.submit(
        module="mse",
        probe_file=Path("solutions/pytorch_losses/hidden_tests/probes.py"),
        probe="mse_value",
        kwargs={"seed": 1, "device": "cuda", "dtype": "float32", "shape": [3, 4]},
    )
    print("result:", sandbox.result(job))
except Exception as error:
    print("failed:", type(error).__name__, str(error)[:2000])
finally:
    print("--- the zygote's log:")
    print((work / "sandbox" / "server.log").read_text(errors="replace")[-8000:])
    sandbox.close()
PY
for assignment in ${GPU_CHECK_ASSIGNMENTS:-pytorch_basics pytorch_losses pytorch_training pytorch_graphs}; do
    step "${GPU_CHECK_GRADE_S:-150}" "grade the $assignment reference on cuda" \
        "$PY" -m grader grade "solutions/$assignment" -a "$assignment" --device cuda --seed 1 \
        --report "$OUT/$assignment-report.json"
done
step "${GPU_CHECK_TESTS_S:-240}" "tests/test_gpu.py" \
    "$PY" -m pytest tests/test_gpu.py -v -p no:cacheprovider -o addopts=""
step "${GPU_CHECK_BENCH_S:-120}" "bench_grade.py --device cuda" \
    "$PY" bench/bench_grade.py --device cuda --repeats 1
grep "^=== .*: exit" "$LOG"
