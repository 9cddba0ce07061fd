# `make test` and `make demo` are all a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test test-fast test-slow demo lint typecheck format bench stress clean rdatom

$(STAMP): pyproject.toml setup.py datom_core/_identity/_chrenc.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check datom_core datom_dagster example_project tests benchmarks
	$(VENV)/bin/ruff format --check datom_core datom_dagster example_project tests benchmarks
	$(VENV)/bin/mypy

typecheck: $(STAMP)
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix datom_core datom_dagster example_project tests benchmarks
	$(VENV)/bin/ruff format datom_core datom_dagster example_project tests benchmarks

test: lint
	$(PY) -m pytest -n 2 --dist loadgroup -q

# Two lanes of the same suite: `test-fast` (everything not marked slow: a few minutes) for
# the edit-test loop, `test-slow` (the process-level tests: concurrency, kills, celery,
# the browser). `make test` runs both.
test-fast: lint
	$(PY) -m pytest -n 2 --dist loadgroup -q -m "not slow"

test-slow: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q -m slow

# The real R datom (0.2.0 and 0.1.1) for the cross-language tests (tests/rdatom/): Debian's
# R through apt-get (needs root), then the R packages into $(RDATOM_LIB). Idempotent; a
# second run takes seconds. Without it `make test` skips those tests and says why.
RDATOM_SRC ?= $(CURDIR)/../shared/rdatom
RDATOM_LIB ?= $(or $(TMPDIR),/tmp)/datom-rdatom-lib
export RDATOM_LIB

rdatom: $(STAMP)
	@test -x $(RDATOM_SRC)/setup.sh || { echo "no R datom sources at $(RDATOM_SRC): set RDATOM_SRC"; exit 1; }
	ARROW_SHIM_PYTHON=$(abspath $(PY)) $(RDATOM_SRC)/setup.sh

demo: $(STAMP)
	$(PY) -m example_project.demo

bench: $(STAMP)
	$(PY) benchmarks/bench_hash.py
	$(PY) benchmarks/bench_write_read.py
	$(PY) benchmarks/bench_inbox.py
	$(PY) benchmarks/bench_reads.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_concurrency.py
	$(PY) benchmarks/bench_dagster.py

stress: $(STAMP)
	$(PY) benchmarks/stress_writers.py --rounds 5 --seed 1
	$(PY) benchmarks/stress_writers.py --rounds 3 --seed 2 --remote https
	$(PY) benchmarks/stress_writers.py --rounds 3 --seed 3 --remote https --store s3
	$(PY) benchmarks/stress_writers.py --rounds 3 --seed 4 --remote https --store s3 --faults

clean:
	rm -rf $(VENV) .demo .pytest_cache
