# Two commands set everything up on a fresh machine:
#   make run   - create .venv, install, grade the bundled example submission of each assignment
#   make test  - create .venv with dev tools, run ruff, mypy, validate every assignment and
#                run the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt
# Each assignment's [environment] packages, locked with hashes (docs/authoring.md, section 3).
LOCKS := $(wildcard assignments/*/environment.lock)
INSTALL_LOCKS := for lock in $(LOCKS); do $(PY) -m pip install --quiet \
	--disable-pip-version-check --no-deps --require-hashes -r $$lock || exit 1; done
# The assignment the docker targets build and grade (make docker-test ASSIGNMENT=x).
ASSIGNMENT ?= pytorch_basics

.PHONY: run test lint typecheck validate unit bench gpu-check clean lock

$(VENV)/.runtime: pyproject.toml constraints.txt $(LOCKS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	@$(INSTALL_LOCKS)
	touch $@

$(VENV)/.dev: pyproject.toml constraints.txt $(LOCKS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[dev,stats]'
	@$(INSTALL_LOCKS)
	touch $(VENV)/.runtime $@

# constraints.txt locks every package the grader, its tools and the Gradescope image install,
# for every platform and Python >= 3.10 (uv's universal resolution), from pyproject.toml's
# ranges and constraints.in. It keeps each pin that still fits; LOCK_ARGS=--upgrade moves
# every package to its newest version, LOCK_ARGS="--upgrade-package NAME" one. Then rebuild
# each assignment that declares packages (python -m grader build autograder -a ID).
LOCK_ARGS ?=
lock: $(VENV)/.dev
	UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv pip compile pyproject.toml --all-extras \
		--universal --python-version 3.10 --constraint constraints.in \
		--custom-compile-command "make lock" --output-file constraints.txt --quiet $(LOCK_ARGS)

# examples/<assignment>-submission is the example of assignments/<assignment>.
run: $(VENV)/.runtime
	@set -e; for example in examples/*-submission; do \
		id=$${example#examples/}; id=$${id%-submission}; \
		test -f assignments/$$id/assignment.toml || continue; \
		echo "== $$id: grading the example $$example/"; \
		$(PY) -m grader grade $$example -a $$id --device auto \
			--report out/$$id-example-report.json --results out/$$id-example-results.json; \
	done

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(VENV)/.dev
	$(PY) -m mypy

validate: $(VENV)/.dev
	$(PY) -m grader validate

# The inner loop: every test but the end-to-end ones marked slow. In one process: pytest-xdist's
# workers each import torch and collect again, which costs more than they save here.
unit: $(VENV)/.dev
	$(PY) -m pytest -m "not slow"

# ruff, mypy and validate side by side (each one's output kept together), then one pytest
# worker per core, each taking whole files (their fixtures grade a corpus once).
test: $(VENV)/.dev
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck validate
	$(PY) -m pytest -n auto --dist loadfile

# Every benchmark docs/benchmarks.md quotes, at its defaults; the container's for each
# assignment whose image `make docker ASSIGNMENT=x` built, where a Docker engine answers.
# tests/test_bench.py runs each one at its smallest setting, so a change that breaks one fails
# `make test`.
bench: $(VENV)/.dev
	$(PY) bench/bench_grade.py
	$(PY) bench/bench_check.py
	$(PY) bench/bench_batch.py
	$(PY) bench/bench_similarity.py
	@ran=0; for folder in assignments/*/; do id=$$(basename $$folder); \
		docker image inspect torch-grader-autograder:$$id >/dev/null 2>&1 || continue; \
		echo "$(PY) bench/bench_container.py -a $$id"; \
		$(PY) bench/bench_container.py -a $$id || exit 1; ran=1; \
	done; test $$ran = 1 || echo "bench_container.py not run: no Docker engine or no image" \
		"(make docker ASSIGNMENT=x builds one)"

# The CUDA path end to end, on a machine with a GPU (bench/gpu_check.sh says what it runs).
gpu-check: $(VENV)/.dev
	PYTHON=$(PY) bash bench/gpu_check.sh

clean:
	rm -rf $(VENV) out .mypy_cache .ruff_cache .pytest_cache

# The Gradescope image and its test in a real container (docker/README.md). Needs Docker's
# packages (apt-get install docker.io debootstrap); the engine is started if none answers.
# BASE=auto|gradescope|standin picks the base image (auto: Gradescope's where it can be
# pulled, else a Debian stand-in made with debootstrap); DOCKER_TEST_ARGS passes more
# options to docker/container_test.py (--cpus 1, --memory 2g, --jobs N, --only CASE ...).
BASE ?= auto
DOCKER_TEST_ARGS ?=

.PHONY: docker docker-test

docker: $(VENV)/.dev
	$(PY) docker/container_test.py -a $(ASSIGNMENT) --base $(BASE) --build-only

docker-test: $(VENV)/.dev
	$(PY) docker/container_test.py -a $(ASSIGNMENT) --base $(BASE) $(DOCKER_TEST_ARGS)
