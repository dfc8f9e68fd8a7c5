# Live Memory: one place for every developer command. Works on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: run test check bench install clean fake-provider

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/live-memory serve

check: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/mypy

test: check
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m bench

fake-provider: $(STAMP)
	$(BIN)/python -m tests.fakes.llm_server --port 8089

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
