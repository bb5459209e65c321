# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-slow lint bench clean

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

# the default suite: parity on bounded subsets of the real data (< 15 min on 2 cores)
test: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

# the full sweeps over the real data (every system of every pair); CI runs them too
test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache evalab-demo
