# The two Quick-start commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.chunkwise-installed

.PHONY: install browser demo test test-ray bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job on the shipped examples: index them into Milvus Lite (./chunkwise.db), then answer a search.
demo: $(STAMP)
	$(BIN)/chunkwise index examples/
	$(BIN)/chunkwise search "What should the keeper do before cleaning the lens on foggy days?" -k 3
	$(BIN)/chunkwise ask "What should the keeper do before cleaning the lens on foggy days?"

# Debian's chromium for the browser tests of `chunkwise viz`/`serve` (Playwright drives it; its own browser
# download is not used). Skipped gracefully where apt is unavailable: those tests then skip and say why.
browser:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
	  || echo "chromium: apt-get install failed; the browser tests will skip"; \
	else echo "chromium: not installed (needs apt-get as root); the browser tests will skip"; fi

test: $(STAMP) browser
	$(BIN)/python -m pytest

# The Ray engine's tests alone (ray is in the dev extra, so `make test` runs them too).
test-ray: $(STAMP)
	$(BIN)/python -m pytest tests/test_ray_engine.py

clean:
	rm -rf $(VENV) chunkwise.db
