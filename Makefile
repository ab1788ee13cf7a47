# Quick start: `make demo` then `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m mnistforge demo --out demo-out --overwrite

# Lint and type check first (seconds), then the tests and the docstring examples, on two
# processes (pytest-xdist; a file's tests stay on one worker, in order: the docs' examples
# share a namespace per page). JOBS=1 runs them in this process.
JOBS ?= 2
test: lint
	$(PY) -m pytest -q -m "not slow" -n $(JOBS) --dist loadfile

lint: $(STAMP)
	$(PY) -m ruff check mnistforge tests benchmarks
	$(PY) -m mypy

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-out *.egg-info .pytest_cache
