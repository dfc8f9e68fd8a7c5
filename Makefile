# Live Memory: one place for every developer command. Works on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
CLAUDE_CLI := .tools/claude-cli/node_modules/.bin/claude
CODEX_CLI := .tools/agents/codex/node_modules/.bin/codex
OPENCODE_CLI := .tools/agents/opencode/node_modules/.bin/opencode
GEMINI_CLI := .tools/agents/gemini/node_modules/.bin/gemini

.PHONY: help run demo test check bench install clean fake-provider claude-cli agent-clis agents-cli docs plugin deploy-files

# `make` or `make help`: every target with its one line (the `## ` comment after its name).
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What serving needs, nothing more (no test or lint tools).
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

# The dev extra = the test extra + the linters.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP) $(RUN_STAMP)

install: $(DEV_STAMP) ## create .venv with the dev extra (tests, linters)

run: $(RUN_STAMP) ## install what serving needs and serve http://127.0.0.1:7711/mcp
	$(BIN)/live-memory serve

# A scripted provider on loopback, a throwaway server, two questions about this checkout; no key, no network.
demo: $(RUN_STAMP) ## a scripted model, a throwaway server, two questions: no key, no network
	$(BIN)/live-memory demo

check: $(DEV_STAMP) ## ruff, ruff format --check, mypy --strict, lint-imports
	$(BIN)/ruff check server tests bench hooks
	$(BIN)/ruff format --check server tests bench hooks
	$(BIN)/mypy
	$(BIN)/lint-imports

test: check ## check, then the whole suite
	@[ -x $(CLAUDE_CLI) ] || command -v claude >/dev/null 2>&1 || \
		echo "NOTICE: Claude Code CLI not found: plugin validate + end-to-end tests are skipped (make claude-cli)"
	@[ -x $(CODEX_CLI) ] || command -v codex >/dev/null 2>&1 || \
		echo "NOTICE: Codex CLI not found: its end-to-end tests (tests/agents) are skipped (make agent-clis)"
	@[ -x $(OPENCODE_CLI) ] || command -v opencode >/dev/null 2>&1 || \
		echo "NOTICE: OpenCode CLI not found: its end-to-end tests (tests/agents) are skipped (make agent-clis)"
	@[ -x $(GEMINI_CLI) ] || command -v gemini >/dev/null 2>&1 || \
		echo "NOTICE: Gemini CLI not found: its end-to-end tests (tests/agents) are skipped (make agent-clis)"
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		echo "NOTICE: PostgreSQL server not found: team store tests are skipped (Debian: apt-get install postgresql)"
	@# Byte-compiled once here (under a second), not by each of the suite's workers and server processes at once.
	$(BIN)/python -m compileall -q -x '/\.cache/' server hooks bench tests >/dev/null
	$(BIN)/python -m pytest -q

bench: $(DEV_STAMP) ## every benchmark, then docs/benchmarks.md and the README's figures
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench
	$(BIN)/python -m bench.report

docs: $(DEV_STAMP) ## regenerate docs/configuration.md from the options table
	$(BIN)/python -m live_memory.cli.config_docs > docs/configuration.md

# deploy/ holds links to the package's templates (the source of truth `live-memory service install` writes
# from), for people who install by hand: one copy of each file, whichever way it is reached.
TEMPLATES := ../server/live_memory/deploy_templates
deploy-files: ## relink deploy/ to the package's service templates
	for name in live-memory.service live-memory.user.service live-memory.env.example; do \
		ln -sfn $(TEMPLATES)/$$name deploy/$$name; done
	ln -sfn $(TEMPLATES)/wait_for_health.py deploy/wait-for-health.py

fake-provider: $(DEV_STAMP) ## the scripted fake provider on http://127.0.0.1:8089
	$(BIN)/python -m live_memory.testing.llm_server --port 8089

claude-cli: ## the Claude Code CLI into .tools/ (npm), for the plugin's tests
	scripts/install-claude-cli.sh

agent-clis: ## Codex, OpenCode and Gemini CLI into .tools/ (npm), for tests/agents
	scripts/install-agent-clis.sh codex opencode gemini

agents-cli: agent-clis

# The plugin alone (manifests, hooks, commands, skill) in dist/plugin: a small folder to install from,
# since Claude Code copies a local plugin folder whole into its cache (docs/claude-code.md).
plugin: ## the plugin alone in dist/plugin, to install from a checkout
	scripts/build-plugin.sh dist/plugin

clean: ## remove .venv and the tools' caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist/plugin
