# Live Memory: one place for every developer command. Works on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
CLAUDE_CLI := .tools/claude-cli/node_modules/.bin/claude

.PHONY: run test check bench install clean fake-provider claude-cli docs

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
	$(BIN)/ruff check server tests bench hooks
	$(BIN)/ruff format --check server tests bench hooks
	$(BIN)/mypy

test: check
	@[ -x $(CLAUDE_CLI) ] || command -v claude >/dev/null 2>&1 || \
		echo "NOTICE: Claude Code CLI not found: plugin validate + end-to-end tests are skipped (make claude-cli)"
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench
	$(BIN)/python -m bench.report

docs: $(STAMP)
	$(BIN)/python -m live_memory.config_docs > docs/configuration.md

fake-provider: $(STAMP)
	$(BIN)/python -m tests.fakes.llm_server --port 8089

claude-cli:
	scripts/install-claude-cli.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
