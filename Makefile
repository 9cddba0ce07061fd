# `make test`, `make demo` and `make docs` are all a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# One stamp per set of extras: `make demo` installs only what the demo runs (the `demo`
# extra), `make test` the whole toolchain (the `test` extra, which includes the docs tools).
STAMP      := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo
BENCH_STAMP := $(VENV)/.installed-bench
DEPS       := pyproject.toml setup.py datom_core/_identity/_chrenc.c

.PHONY: test test-fast test-slow test-plain demo docs lint typecheck format bench stress clean rdatom

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(DEPS) | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

# The test toolchain holds everything the demo needs: a test install satisfies the demo.
$(DEMO_STAMP): $(DEPS) | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[demo]'
	touch $(DEMO_STAMP)

# The table formats the benchmarks print beside datom (the `bench` extra), over the tests'.
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(BENCH_STAMP)

LINTED := datom_core datom_dagster example_project tests benchmarks docs/hooks.py

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy

typecheck: $(STAMP)
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix $(LINTED)
	$(VENV)/bin/ruff format $(LINTED)

test: lint
	$(PY) -m pytest -n 2 --dist loadgroup -q
	$(MAKE) test-plain

# Two lanes of the same suite: `test-fast` (everything not marked slow: a few minutes) for
# the edit-test loop, `test-slow` (the process-level tests: concurrency, kills, celery,
# the browser, the docs build, the wheel installed into a fresh virtualenv). `make test`
# runs both. Both run `test-plain` after them.
test-fast: lint
	$(PY) -m pytest -n 2 --dist loadgroup -q -m "not slow"
	$(MAKE) test-plain

# The fast lane's tests of every accelerator's plain path, under DATOM_PLAIN=1 (see
# docs/performance.md, "Accelerators"): the git layer (index, trees, packs, path history),
# the project's writes and reads (manifest and history splices, parallel PUTs), and
# the string hashes (the C encoder) against R's conformance vectors.
# (Tests of an accelerator itself take the `accelerated` fixture and run as in the lane.)
PLAIN_TESTS = tests/core/test_git*.py tests/core/test_project_*.py tests/core/test_plain_mode.py \
	tests/core/test_group_*.py tests/core/test_big_table*.py \
	tests/core/test_history_first_entry.py tests/core/test_read_path.py \
	tests/core/test_identity_strings.py tests/core/test_conformance.py
test-plain: $(STAMP)
	DATOM_PLAIN=1 $(PY) -m pytest -n 2 --dist loadgroup -q -m "not slow" $(PLAIN_TESTS)

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

# The whole first run is timed, installing included (target: 90 s on a fresh 2-core machine).
demo:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory $(DEMO_STAMP) && \
	$(PY) -m example_project.demo && \
	echo "make demo: $$(( $$(date +%s) - start )) s in all, installing included"

# The user documentation, into site/; every warning is an error (mkdocs.yml: strict).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: $(BENCH_STAMP)
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
	rm -rf $(VENV) .demo .pytest_cache site build dist
