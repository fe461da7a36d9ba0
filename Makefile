# The two Quick-start commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.chunkwise-installed

.PHONY: install demo test test-ray bench clean

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

test: $(STAMP)
	$(BIN)/python -m pytest

# The Ray engine's tests (skipped by `make test` unless ray is installed): ray is ~240 MB, ~1 min to install.
test-ray: $(STAMP)   # the Ray tests alone (ray is in the dev extra, so `make test` runs them too)
	$(BIN)/python -m pytest tests/test_ray_engine.py

clean:
	rm -rf $(VENV) chunkwise.db
