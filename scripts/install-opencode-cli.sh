#!/bin/sh
# Install the OpenCode CLI (npm package opencode-ai) into .tools/agents/opencode/ (repo-local, git-ignored)
# for the offline end-to-end tests in tests/agents/test_opencode.py.
# The tests look for .tools/agents/opencode/node_modules/.bin/opencode first, then `opencode` on PATH.
# Usage: scripts/install-opencode-cli.sh [version]   (default: the version the integration was verified with)
set -eu
VERSION="${1:-${OPENCODE_CLI_VERSION:-1.18.33}}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.tools/agents/opencode"
if ! command -v npm >/dev/null 2>&1; then
    echo "install-opencode-cli: npm not found; install Node.js 18 or newer first" >&2
    exit 1
fi
mkdir -p "$DEST"
# Why a folder of its own under .tools/agents: npm prunes what its prefix did not install, and other
# agents' CLIs live beside it.
# The platform binary comes from the registry as an optional dependency of opencode-ai.
npm install --prefix "$DEST" --no-save --no-fund --no-audit --loglevel=error "opencode-ai@$VERSION"
# Why a throwaway HOME and these variables: never touch the user's ~/.config/opencode, never phone home.
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
HOME="$SCRATCH" XDG_CONFIG_HOME="$SCRATCH/config" XDG_DATA_HOME="$SCRATCH/data" XDG_CACHE_HOME="$SCRATCH/cache" \
    XDG_STATE_HOME="$SCRATCH/state" OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
    "$DEST/node_modules/.bin/opencode" --version
