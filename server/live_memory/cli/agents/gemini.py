"""Connect Google's Gemini CLI to Live Memory: its MCP server entry, its file-feed hook, its GEMINI.md note.

Owns these entries and nothing else in the files that hold them:
  - ``settings.json`` in the Gemini home (``$GEMINI_CLI_HOME/.gemini``, default ``~/.gemini``):
    ``mcpServers.live_memory`` (streamable HTTP by ``httpUrl``; the token, when there is one, as a
    ``${VAR}`` reference in ``headers``, which Gemini CLI expands from its environment when it loads the
    file) and, when the hook scripts are at hand, one ``hooks.AfterTool`` group named ``live-memory-notify``
    that runs ``hooks/gemini_notify.py`` after Gemini's file tools;
  - ``<home>/live-memory/``: a copy of the hook scripts (a path that outlives the checkout they came from);
  - ``<repository>/GEMINI.md``, only when asked: a marked note telling the agent when to ask Live Memory.

settings.json is JSON: it is parsed, our entries are put in (in place when they exist, else last), and it is
written back with the user's keys in their order (indented by two spaces, as Gemini CLI writes it). A file
Python's json cannot read (Gemini also accepts comments, which a rewrite would lose), a non-object where an
object belongs, or a hand-written ``mcpServers.live_memory`` is refused with a message that says what to
fix. Never writes the token itself. A user-level hook needs no trust step (Gemini CLI fingerprints only a
project's own hooks).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_memory.cli.agents import files
from live_memory.cli.agents.files import CHECKOUT_HOOKS, HOOK_DIR_NAME
from live_memory.constants import AGENT_HEADER
from live_memory.errors import ConfigError

SERVER_NAME = "live_memory"
AGENT_NAME = "gemini-cli"  # what /stats counts its questions under (sent as AGENT_HEADER)
# Marks the server entry as install's, so uninstall never removes a hand-written one.
SERVER_DESCRIPTION = "Live Memory: a persistent memory of the codebase (added by live-memory install gemini)"
# Live Memory's soft deadline plus its queueing fit well inside this (Gemini CLI counts milliseconds).
TOOL_TIMEOUT_MS = 300_000
HOOK_NAME = "live-memory-notify"
# Each tee gives up after ~1 s (hooks/notify.py); the margin covers a slow python start.
HOOK_TIMEOUT_MS = 5_000
# Gemini CLI's tools that read or change a file by path (its AfterTool matcher is a regular expression).
HOOK_MATCHER = "^(read_file|read_many_files|write_file|replace)$"
HOOK_FILES = ("gemini_notify.py", "notify.py", "_client.py")
NOTE = files.Note(
    "GEMINI.md", "<!-- added by live-memory install gemini -->", "<!-- end of live-memory install gemini -->"
)


def gemini_home(env: Mapping[str, str] | None = None) -> Path:
    """Where Gemini CLI keeps its settings: ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini`` (its own rule)."""
    env = os.environ if env is None else env
    configured = env.get("GEMINI_CLI_HOME", "").strip()
    root = Path(configured).expanduser() if configured else Path(env.get("HOME") or Path.home())
    return root / ".gemini"


def install(
    home: Path,
    url: str,
    token_env: str | None,
    *,
    instructions_dir: Path | None,
    hooks_source: Path | None = CHECKOUT_HOOKS,
) -> list[str]:
    """As `codex.install`, for the Gemini home ``home`` (its ``settings.json``; the note goes in GEMINI.md)."""
    base, lines, hooked = files.prepare_install(url, token_env, hooks_source, home / HOOK_DIR_NAME, HOOK_FILES)
    hook = _hook(home, base, token_env) if hooked else None
    path = home / "settings.json"
    text = files.read_text(path)
    settings = _parse(text, path)
    wanted = _with_ours(settings, _server(base + "/mcp", token_env), hook, path)
    token = f", bearer token from ${token_env}" if token_env else ""
    said = [f"{path}: mcpServers.{SERVER_NAME} httpUrl = {base}/mcp{token}"]
    if hook is not None:
        said.append(f"{path}: hooks.AfterTool tees read_file and write_file/replace to {base}/notify")
    lines = files.write_config(path, None if wanted == settings else _render(wanted), said, lines)
    if instructions_dir is not None:
        lines.append(NOTE.add(instructions_dir))
    return lines


def uninstall(home: Path, *, instructions_dir: Path | None) -> list[str]:
    """Remove what :func:`install` added, and only that; returns what changed, in words."""
    path = home / "settings.json"
    settings = _parse(files.read_text(path), path)
    left = _without_ours(settings)
    new_text = None if left == settings else _render(left) if left else ""
    hooks = (home / HOOK_DIR_NAME, HOOK_FILES)
    return files.finish_uninstall(path, new_text, f"mcpServers.{SERVER_NAME}", hooks, NOTE, instructions_dir)


# ---------------------------------------------------------------------------------------- our entries


def _server(mcp_url: str, token_env: str | None) -> dict[str, Any]:
    server: dict[str, Any] = {"httpUrl": mcp_url, "headers": {AGENT_HEADER: AGENT_NAME}}
    if token_env:
        # Gemini CLI expands ${VAR} in settings.json from its environment: the file holds the name only.
        server["headers"]["Authorization"] = f"Bearer ${{{token_env}}}"
    server["timeout"] = TOOL_TIMEOUT_MS
    # Why trust: the tool only asks questions (it reads nothing outside the memory and changes nothing), and
    # an untrusted MCP tool needs a confirmation that a non-interactive `gemini -p` cannot give.
    server["trust"] = True
    server["description"] = SERVER_DESCRIPTION
    return server


def _hook(home: Path, base: str, token_env: str | None) -> dict[str, Any]:
    script = home / HOOK_DIR_NAME / "gemini_notify.py"
    env = {"LIVE_MEMORY_URL": base}
    if token_env:
        env["LIVE_MEMORY_AUTH_TOKEN"] = f"${{{token_env}:-}}"  # expanded by Gemini CLI, as in headers
    handler = {
        "name": HOOK_NAME,
        "type": "command",
        "command": f"python3 {shlex.quote(str(script))}",
        "timeout": HOOK_TIMEOUT_MS,
        "env": env,
    }
    return {"matcher": HOOK_MATCHER, "hooks": [handler]}


def _is_our_group(group: Any) -> bool:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and any(isinstance(h, dict) and h.get("name") == HOOK_NAME for h in handlers)


def _is_our_server(server: Any) -> bool:
    return isinstance(server, dict) and server.get("description") == SERVER_DESCRIPTION


# ------------------------------------------------------------------------------------------ settings.json


def _parse(text: str, path: Path) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); Live Memory edits only plain JSON (a rewrite would lose comments"
            " or trailing commas): fix it, or add the entries by hand as docs/agents.md shows"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object, got {type(data).__name__}; fix it and run again")
    return data


def _render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _table(settings: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """``settings[key]``, a JSON object (created when absent); anything else is refused."""
    value = settings.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key} must be a JSON object, got {type(value).__name__}; fix it and run again")
    return value


def _with_ours(
    settings: dict[str, Any], server: dict[str, Any], hook: dict[str, Any] | None, path: Path
) -> dict[str, Any]:
    """A copy of ``settings`` holding our server entry and hook group (the old ones replaced in place)."""
    data = copy.deepcopy(settings)
    servers = _table(data, "mcpServers", path)
    if SERVER_NAME in servers and not _is_our_server(servers[SERVER_NAME]):
        raise ConfigError(
            f"{path} already defines mcpServers.{SERVER_NAME} by hand; remove that entry (Live Memory writes"
            " its own) and run install again"
        )
    servers[SERVER_NAME] = server
    hooks = _table(data, "hooks", path) if hook is not None or "hooks" in data else None
    if hooks is not None:
        groups = hooks.setdefault("AfterTool", [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.AfterTool must be a JSON array; fix it and run again")
        ours = [i for i, group in enumerate(groups) if _is_our_group(group)]
        kept = [group for group in groups if not _is_our_group(group)]
        if hook is not None:
            kept.insert(ours[0] if ours else len(kept), hook)
        hooks["AfterTool"] = kept
    return _without_empty(data, settings)


def _without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(settings)
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and _is_our_server(servers.get(SERVER_NAME)):
        del servers[SERVER_NAME]
    hooks = data.get("hooks")
    if isinstance(hooks, dict) and isinstance(hooks.get("AfterTool"), list):
        hooks["AfterTool"] = [group for group in hooks["AfterTool"] if not _is_our_group(group)]
    return _without_empty(data, settings)


def _without_empty(data: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the containers left empty by our edit (those the user had empty stay)."""
    hooks, hooks_before = data.get("hooks"), before.get("hooks")
    had_none = not isinstance(hooks_before, dict) or hooks_before.get("AfterTool") != []
    if isinstance(hooks, dict) and hooks.get("AfterTool") == [] and had_none:
        del hooks["AfterTool"]
    for key in ("mcpServers", "hooks"):
        if data.get(key) == {} and before.get(key) != {}:
            del data[key]
    return data
