# Two commands set everything up on a fresh machine:
#   make run   - create .venv, install, grade the bundled example submission of each assignment
#   make test  - create .venv with dev tools, run ruff, mypy, validate every assignment and
#                run the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt
# The assignment `make docker-test` grades its reference with (make docker-test ASSIGNMENT=x).
ASSIGNMENT ?= pytorch_basics

.PHONY: run test lint typecheck validate unit bench clean

$(VENV)/.runtime: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

$(VENV)/.dev: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[dev,stats]'
	touch $(VENV)/.runtime $@

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

unit: $(VENV)/.dev
	$(PY) -m pytest -m "not slow"

test: lint typecheck validate
	$(PY) -m pytest

bench: $(VENV)/.dev
	$(PY) bench/bench_grade.py
	$(PY) bench/bench_check.py
	$(PY) bench/bench_batch.py

clean:
	rm -rf $(VENV) out .mypy_cache .ruff_cache .pytest_cache

# Gradescope image (needs a Docker engine; see docker/README.md).
IMAGE ?= torch-grader-autograder
DOCKER_BUILD := build/docker
# Gradescope's default machine; raise both with the assignment's Autograder Settings.
DOCKER_TEST_FLAGS ?= --cpus=0.5 --memory=768m

.PHONY: docker docker-test

docker: $(VENV)/.runtime
	rm -rf $(DOCKER_BUILD)
	$(PY) -m grader build autograder -a $(ASSIGNMENT) -o $(DOCKER_BUILD)/autograder.zip
	$(PY) -m zipfile -e $(DOCKER_BUILD)/autograder.zip $(DOCKER_BUILD)/context
	docker build -f docker/Dockerfile -t $(IMAGE) $(DOCKER_BUILD)/context

docker-test: docker
	rm -rf $(DOCKER_BUILD)/run
	mkdir -p $(DOCKER_BUILD)/run/submission $(DOCKER_BUILD)/run/results
	cp solutions/$(ASSIGNMENT)/*.py $(DOCKER_BUILD)/run/submission/
	docker run --rm $(DOCKER_TEST_FLAGS) \
		-v "$(CURDIR)/$(DOCKER_BUILD)/run/submission:/autograder/submission" \
		-v "$(CURDIR)/$(DOCKER_BUILD)/run/results:/autograder/results" \
		$(IMAGE) /autograder/run_autograder
	$(PY) -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["output"]); print("score", r["score"]); sys.exit(abs(r["score"] - 100) > 1e-3)' $(DOCKER_BUILD)/run/results/results.json
