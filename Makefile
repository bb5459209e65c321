# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-slow test-full lint bench clean

# torch is installed first and pinned: any other spec would download a multi-GB CUDA build
$(STAMP): pyproject.toml setup.py src/evalab/_mtkernel.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/evalab demo

# the default suite: parity on bounded subsets of the real data (budget: 8 min on 2 cores;
# tests/test_budget.py counts what drives it). Two xdist workers, one per core; tests that
# share a module's fixture (a Ray instance, an oracle's answers) stay on one worker
# (--dist loadgroup, groups set in tests/conftest.py). --durations names the slowest tests
# in every log, CI's included. The COMET oracle's venv, checkpoints and answers are cached
# outside the checkout (~/.cache/evalab-tests, or $EVALAB_TEST_CACHE): a fresh clone reuses them.
test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n 2 --dist loadgroup --durations=25

# sweeps over the real data that fit in CI (every system of the pairs they name); CI runs them,
# on two workers as `make test` (the demo page's training and the COMET sweep side by side)
test-slow: $(STAMP)
	$(PY) -m pytest -q -m "slow and not full" -n 2 --dist loadgroup --durations=25

# the sweeps too long for CI (every system of every WMT22 pair against a pure-Python peer)
test-full: $(STAMP)
	$(PY) -m pytest -q -m full

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy src

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache evalab-demo
