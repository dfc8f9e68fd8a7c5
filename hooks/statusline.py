#!/usr/bin/env python3
"""A Claude Code status-line segment for Live Memory: `LM 42% · $0.12` for the current project.

Wire it into your own settings (a plugin cannot set a status line), e.g. ~/.claude/settings.json:
    "statusLine": {"type": "command", "command": "python3 ~/.claude/plugins/data/live-memory-shofer/statusline.py"}
The plugin's SessionStart hook keeps a copy there (with `_client.py`), because the plugin's own folder
changes with every update. Reads Claude Code's status-line JSON on stdin; prints one short segment:
  LM 42% · $0.12   fill of the memory's context window and its cumulative cost for this project
  LM idle          the server runs but has not loaded this project yet
  LM auth?         the server wants a bearer token (LIVE_MEMORY_AUTH_TOKEN in Claude Code's environment)
  LM off           no server answers
Stdlib only, python3 >= 3.8, always exits 0 within about a second.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # why: PYTHONSAFEPATH would hide _client

import _client

TIMEOUT_S = 0.5
DEADLINE_S = 1.0
# Written by the SessionStart hook next to this copy: the plugin's server_url option, which a status
# line (run from user settings, not as a plugin hook) would not otherwise see.
SAVED_OPTIONS = "client.json"


def project_of(status: Mapping[str, Any] | None) -> str:
    if status is not None:
        workspace = status.get("workspace")
        if isinstance(workspace, dict):
            for key in ("project_dir", "current_dir"):
                value = workspace.get(key)
                if isinstance(value, str) and os.path.isabs(value):
                    return value
    return _client.project_dir(status)


def client_env() -> dict[str, str]:
    env = dict(os.environ)
    if not env.get("CLAUDE_PLUGIN_OPTION_SERVER_URL"):
        try:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), SAVED_OPTIONS), "rb") as handle:
                saved = json.loads(handle.read().decode("utf-8"))
            if isinstance(saved, dict) and isinstance(saved.get("server_url"), str):
                env["CLAUDE_PLUGIN_OPTION_SERVER_URL"] = saved["server_url"]
        except Exception:
            pass
    return env


def cost_text(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "$?"
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.3f}"


def segment(status: Mapping[str, Any] | None) -> str:
    root = project_of(status)
    code, data = _client.request("GET", "/stats", query={"cwd": root}, timeout=TIMEOUT_S, env=client_env())
    if code == 404:
        return "LM idle"
    if code in (401, 403):
        return "LM auth?"  # set LIVE_MEMORY_AUTH_TOKEN where Claude Code starts
    workspace = (data or {}).get("workspace")
    if code != 200 or not isinstance(workspace, dict):
        return "LM off"
    ratio = _client.number(_client.obj(workspace.get("fill")).get("ratio"))
    return f"LM {ratio * 100:.0f}% · {cost_text(workspace.get('cost_usd'))}"


def main() -> None:
    _client.run_bounded(lambda: segment(_client.read_payload()) + "\n", DEADLINE_S, "LM ?\n")


if __name__ == "__main__":
    main()
