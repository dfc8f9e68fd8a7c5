#!/bin/sh
# Copy the Claude Code plugin alone (manifests, .mcp.json, hooks, commands, skill, LICENSE) into a folder of its
# own, default dist/plugin/. Why: Claude Code installs a plugin from a local folder by copying the whole folder
# into ~/.claude/plugins/cache/ (everything but .git), so installing from the checkout itself would copy the
# dev venv (.venv) and .tools/ as well. Install from the built folder instead:
#     scripts/build-plugin.sh && claude plugin marketplace add "$PWD/dist/plugin" && claude plugin install live-memory@shofer
# Usage: scripts/build-plugin.sh [DEST]
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/dist/plugin}"
case "$DEST" in /*) ;; *) DEST="$PWD/$DEST" ;; esac
# Only ever replace an empty folder or an earlier build: never remove a folder this script did not make.
if [ -e "$DEST" ] && [ -n "$(ls -A "$DEST" 2>/dev/null)" ] && [ ! -f "$DEST/.claude-plugin/plugin.json" ]; then
    echo "build-plugin: $DEST exists and is not an earlier plugin build; choose another folder" >&2
    exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST/hooks"
cp -R "$ROOT/.claude-plugin" "$ROOT/commands" "$ROOT/skills" "$DEST/"
cp "$ROOT/.mcp.json" "$ROOT/LICENSE" "$DEST/"
cp "$ROOT/hooks/hooks.json" "$ROOT"/hooks/*.py "$DEST/hooks/"
echo "$DEST"
