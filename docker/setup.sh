#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image, after unpacking
# the autograder zip into /autograder/source. It installs the grader into its own virtual
# environment (/autograder/venv) with every package at the version constraints.txt locks
# (torch's CPU build), then each assignment's own packages from its environment.lock (exact
# versions, every file's hash checked), and leaves the system Python, which Gradescope's
# harness uses, untouched. Student code later
# runs as a uid of its own with no account (see grader/sandbox/identity.py), so the only thing to set
# up for it here is what it must not read: source/solutions becomes root-only.
#
# Switches, so this can be exercised outside Gradescope (tests/test_build.py does):
#   GRADER_SETUP_ROOT=DIR         where /autograder is (default /autograder)
#   GRADER_SETUP_PYTHON=EXE       the interpreter the venv is made from (default python3)
#   GRADER_SETUP_SKIP_APT=1       do not apt-get install python3 and python3-venv
#   GRADER_SETUP_SKIP_PIP=1       print the pip commands instead of running them
#   GRADER_SETUP_PIP_ARGS="..."   extra pip arguments (e.g. --no-index --find-links DIR)
#   GRADER_SETUP_TORCH_INDEX=URL  the index torch comes from ("" for pip's default)
set -euo pipefail
umask 022

ROOT="${GRADER_SETUP_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="$ROOT/venv"
PYTHON="${GRADER_SETUP_PYTHON:-python3}"
TORCH_INDEX="${GRADER_SETUP_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
read -r -a EXTRA_PIP_ARGS <<< "${GRADER_SETUP_PIP_ARGS:-}"

say() { printf 'setup.sh: %s\n' "$*"; }

pip_run() {
    local command=("$VENV/bin/python" -m pip install --no-input --no-cache-dir
        --disable-pip-version-check "$@")
    if [[ "${GRADER_SETUP_SKIP_PIP:-0}" == 1 ]]; then
        say "would run: ${command[*]}"
    else
        "${command[@]}"
    fi
}

pip_install() {
    pip_run -c "$SOURCE/constraints.txt" ${EXTRA_PIP_ARGS[@]+"${EXTRA_PIP_ARGS[@]}"} "$@"
}

[[ -f "$SOURCE/constraints.txt" && -d "$SOURCE/grader" ]] || {
    say "no grader in $SOURCE: unpack the autograder zip there first." >&2
    exit 1
}

if [[ "${GRADER_SETUP_SKIP_APT:-0}" == 1 ]]; then
    say "skipping apt-get (GRADER_SETUP_SKIP_APT=1)"
else
    # Ubuntu's python3 cannot make a virtual environment without python3-venv.
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv
fi

say "creating $VENV with $("$PYTHON" --version 2>&1)"
"$PYTHON" -m venv --clear "$VENV"

# torch first, from the CPU-only index, so the project's `torch>=...` is already satisfied
# and pip never pulls the CUDA build (gigabytes Gradescope's CPU machines cannot use).
torch_index=()
[[ -n "$TORCH_INDEX" ]] && torch_index=(--index-url "$TORCH_INDEX")
pip_install ${torch_index[@]+"${torch_index[@]}"} torch
# Editable, so the grader's course root stays /autograder/source (assignments, solutions).
pip_install -e "$SOURCE"
# An assignment's [environment] packages, as its lock says: it lists everything they need
# beyond what is installed above, so pip adds nothing of its own (--no-deps).
for lock in "$SOURCE"/assignments/*/environment.lock; do
    [[ -f "$lock" ]] || continue
    say "installing the packages $lock locks"
    pip_run ${EXTRA_PIP_ARGS[@]+"${EXTRA_PIP_ARGS[@]}"} --no-deps --require-hashes -r "$lock"
done

if [[ -d "$SOURCE/solutions" ]]; then
    chmod -R go-rwx "$SOURCE/solutions"
fi

if [[ "${GRADER_SETUP_SKIP_PIP:-0}" != 1 ]]; then
    "$VENV/bin/python" - "$SOURCE" <<'EOF'
import sys
from pathlib import Path

import torch

import grader

where = Path(grader.__file__).resolve()
if not where.is_relative_to(Path(sys.argv[1]).resolve()):
    sys.exit(f"setup.sh: grader imports from {where}, not from {sys.argv[1]}")
if torch.version.cuda is not None:
    print(f"setup.sh: warning: torch {torch.__version__} is a CUDA build", file=sys.stderr)
print(f"setup.sh: grader {grader.__version__}, torch {torch.__version__}, {sys.version.split()[0]}")
EOF
fi
say "done"
