# `make test` and `make demo` are all a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test demo lint typecheck format bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check datom_core datom_dagster example_project tests benchmarks
	$(VENV)/bin/ruff format --check datom_core datom_dagster example_project tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix datom_core datom_dagster example_project tests benchmarks
	$(VENV)/bin/ruff format datom_core datom_dagster example_project tests benchmarks

test: lint
	$(PY) -m pytest -n 2 -q

demo: $(STAMP)
	$(PY) -m example_project.demo

bench: $(STAMP)
	$(PY) benchmarks/bench_hash.py
	$(PY) benchmarks/bench_write_read.py
	$(PY) benchmarks/bench_inbox.py
	$(PY) benchmarks/bench_reads.py

clean:
	rm -rf $(VENV) .demo .pytest_cache
