#!/bin/sh
# Install other coding agents' CLIs into .tools/agents/<name>/ (repo-local, git-ignored) for the tests that run
# them for real, offline, against the fake provider (tests/agents/). Each agent is pinned to the version its
# integration was verified with; an env var overrides it (e.g. CODEX_CLI_VERSION=0.171.0).
# Usage: scripts/install-agent-clis.sh codex [gemini opencode ...]
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$#" -eq 0 ]; then
    echo "usage: $0 AGENT... (agents: codex, opencode, gemini)" >&2
    exit 2
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install-agent-clis: npm not found; install Node.js 18 or newer first" >&2
    exit 1
fi

npm_install() {  # npm_install DEST PACKAGE@VERSION
    mkdir -p "$1"
    # Why --no-fund/--no-audit: the registry download should be the only network traffic.
    npm install --prefix "$1" --no-save --no-fund --no-audit --loglevel=error "$2"
}

for agent in "$@"; do
    DEST="$ROOT/.tools/agents/$agent"
    case "$agent" in
        codex)
            # The npm package pulls the native binary for this platform as an optional dependency.
            npm_install "$DEST" "@openai/codex@${CODEX_CLI_VERSION:-0.171.0}"
            # Why a throwaway HOME and CODEX_HOME: never touch the user's ~/.codex.
            SCRATCH="$(mktemp -d)" && mkdir "$SCRATCH/.codex"
            HOME="$SCRATCH" CODEX_HOME="$SCRATCH/.codex" "$DEST/node_modules/.bin/codex" --version 2>/dev/null
            rm -rf "$SCRATCH"
            ;;
        opencode)
            # The platform binary comes from the registry as an optional dependency of opencode-ai.
            npm_install "$DEST" "opencode-ai@${OPENCODE_CLI_VERSION:-1.18.33}"
            # Why a throwaway HOME and these variables: never touch ~/.config/opencode, never phone home.
            SCRATCH="$(mktemp -d)"
            HOME="$SCRATCH" XDG_CONFIG_HOME="$SCRATCH/config" XDG_DATA_HOME="$SCRATCH/data" \
                XDG_CACHE_HOME="$SCRATCH/cache" XDG_STATE_HOME="$SCRATCH/state" OPENCODE_DISABLE_AUTOUPDATE=1 \
                OPENCODE_DISABLE_MODELS_FETCH=1 "$DEST/node_modules/.bin/opencode" --version
            rm -rf "$SCRATCH"
            ;;
        gemini)
            # One bundled package with no dependencies (node >= 20).
            npm_install "$DEST" "@google/gemini-cli@${GEMINI_CLI_VERSION:-0.61.0}"
            # Why a throwaway HOME and GEMINI_CLI_HOME: never touch the user's ~/.gemini.
            SCRATCH="$(mktemp -d)"
            HOME="$SCRATCH" GEMINI_CLI_HOME="$SCRATCH" "$DEST/node_modules/.bin/gemini" --version 2>/dev/null
            rm -rf "$SCRATCH"
            ;;
        *)
            echo "install-agent-clis: unknown agent '$agent' (known: codex, opencode, gemini)" >&2
            exit 2
            ;;
    esac
done
