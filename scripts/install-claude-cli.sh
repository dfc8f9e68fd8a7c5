#!/bin/sh
# Install the Claude Code CLI into .tools/claude-cli/ (repo-local, git-ignored) for the plugin tests:
# `claude plugin validate . --strict` and the headless end-to-end tests in tests/plugin/.
# The tests look for .tools/claude-cli/node_modules/.bin/claude first, then `claude` on PATH.
# Usage: scripts/install-claude-cli.sh [version]   (default: the version the plugin was verified with)
set -eu
VERSION="${1:-${CLAUDE_CLI_VERSION:-2.1.332}}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.tools/claude-cli"
if ! command -v npm >/dev/null 2>&1; then
    echo "install-claude-cli: npm not found; install Node.js 18 or newer first" >&2
    exit 1
fi
mkdir -p "$DEST"
# Why --no-fund/--no-audit: the registry download should be the only network traffic.
npm install --prefix "$DEST" --no-save --no-fund --no-audit --loglevel=error "@anthropic-ai/claude-code@$VERSION"
# Why a throwaway HOME and these variables: never touch the user's ~/.claude, never phone home.
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
HOME="$SCRATCH" DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
    "$DEST/node_modules/.bin/claude" --version
