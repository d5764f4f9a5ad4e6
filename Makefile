# Two commands set everything up on a fresh machine:
#   make run   - create .venv, install, grade the bundled example submission
#   make test  - create .venv with dev tools, run ruff, mypy and the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt
EXAMPLE := examples/pytorch_basics-submission

.PHONY: run test lint typecheck unit bench clean

$(VENV)/.runtime: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

$(VENV)/.dev: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[dev,stats]'
	touch $(VENV)/.runtime $@

run: $(VENV)/.runtime
	$(PY) -m grader grade $(EXAMPLE) --device auto \
		--report out/example-report.json --results out/example-results.json

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(VENV)/.dev
	$(PY) -m mypy

unit: $(VENV)/.dev
	$(PY) -m pytest -m "not slow"

test: lint typecheck
	$(PY) -m pytest

bench: $(VENV)/.dev
	$(PY) bench/bench_grade.py

clean:
	rm -rf $(VENV) out .mypy_cache .ruff_cache .pytest_cache
