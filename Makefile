# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo lint test test-fast docs bench clean llama-server

install: $(STAMP)

# System packages first (compiler for llama.cpp, Debian chromium for the browser tests; scripts/system-deps.sh).
# torch is pinned to the CPU wheel on disk (any other spec pulls a multi-GB CUDA build);
# sentence-transformers comes after it, through the [all] extra.
# llama.cpp is compiled once, before pip would compile it for llama-cpp-python: scripts/build-llama.sh builds
# llama-server and the binding's shared libraries from one build, cached outside the venv (~/.cache/bakeoff/
# llama-server/<version>-<cpu>/: a second clone, `make clean` or CI on this machine compiles nothing), and installs
# the binding without its own compile. The stamp is written last: any failed step leaves the venv uninstalled.
$(STAMP): pyproject.toml Makefile scripts/system-deps.sh scripts/build-llama.sh
	bash scripts/system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	bash scripts/build-llama.sh $(VENV)
	$(PY) -m pip install --quiet -e '.[all,test,docs]'
	touch $(STAMP)

llama-server:
	bash scripts/build-llama.sh $(VENV)

# Offline: stdlib docstrings -> queries by the local Qwen2.5-Coder-0.5B (filtered; leak recorded and matched in the
# verdict) -> TF-IDF, BM25, BM25+stemmer, dense, RRF.
demo: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/bakeoff demo --out results/demo

# The docs site, strict (a broken link, anchor or reference fails), then every internal link of the built HTML
# checked (docs/_hooks/link_check.py); into site/.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The static checks, each failing the target: the layer contracts (import-linter, [tool.importlinter] in
# pyproject.toml), ruff ([tool.ruff]) and mypy on src/ ([tool.mypy]); ruff and mypy are pinned in the test extra.
lint: install
	$(VENV)/bin/lint-imports --no-cache --no-logo
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

# The static checks first, then every test.
# BAKEOFF_REQUIRE_BROWSER=1: the browser tests fail (never skip) when chromium or Playwright is missing.
test: install docs lint
	BAKEOFF_REQUIRE_BROWSER=1 HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q

# The benchmark suite's quick subset (benchmarks/run.py; records in benchmarks/records/, rendered by the docs).
bench: install
	HF_HUB_OFFLINE=1 $(PY) benchmarks/run.py --quick

# The developers' fast lane, within 3 minutes on 2 cores: the tests on fakes and small fixtures (-m "not slow": no
# SciFact, PostgreSQL, real model, browser, command line in a subprocess, deliberate wait, nor any test that takes a
# second or more: each such test is marked slow). `make test` stays the whole suite, and what CI runs.
# Needs only `pip install -e '.[test]'` (no system packages, browser or llama.cpp build): it runs the venv's Python
# when `make install` made one, else $(PYTHON) (an environment of your own, e.g. PYTHON=python).
FAST_PY = $(if $(wildcard $(STAMP)),$(PY),$(PYTHON))
test-fast:
	HF_HUB_OFFLINE=1 $(FAST_PY) -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) results .pytest_cache site
