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

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_memory.cli.agents import files
from live_memory.cli.agents.files import HOOK_DIR_NAME, HOOKS_SOURCE
from live_memory.cli.agents.jsonc import Document
from live_memory.constants import AGENT_HEADER
from live_memory.core.errors import ConfigError, JsoncError

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
NOTE_FILE = "GEMINI.md"
# How install names the token in headers: Gemini CLI expands ${VAR} from its environment.
TOKEN_REFERENCE = re.compile(r"^Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
AGENT_KEY = "gemini"  # the agent's name on the command line and in the instructions note


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
    hooks_source: Path | None = HOOKS_SOURCE,
) -> list[str]:
    """As `codex.install`, for the Gemini home ``home`` (its ``settings.json``; the note goes in GEMINI.md)."""
    base = files.check_install(url, token_env)
    hooked = files.has_hooks(hooks_source, HOOK_FILES)
    path = home / "settings.json"
    text = files.read_text(path)
    document = _parse(text, path)
    _put_ours(document, _server(base + "/mcp", token_env), _hook(home, base, token_env) if hooked else None, path)
    token = f", bearer token from ${token_env}" if token_env else ""
    said = [f"{path}: mcpServers.{SERVER_NAME} httpUrl = {base}/mcp{token}"]
    changes = files.Changes()
    files.plan_config(changes, path, text, document.text, said)
    if hooks_source is not None and hooked:
        files.plan_hooks(changes, hooks_source, home / HOOK_DIR_NAME, HOOK_FILES)
        if document.text != text:
            changes.said.append(f"{path}: hooks.AfterTool tees read_file and write_file/replace to {base}/notify")
    else:
        changes.said.append(files.NO_HOOK)
    if instructions_dir is not None:
        files.plan_note(changes, instructions_dir, NOTE_FILE, AGENT_KEY, install=True)
    return changes.apply()


def uninstall(home: Path, *, instructions_dir: Path | None) -> list[str]:
    """Remove what :func:`install` added, and only that; returns what changed, in words."""
    path = home / "settings.json"
    text = files.read_text(path)
    document = _parse(text, path)
    _take_ours(document)
    left = document.text if document.value not in ({}, None) else ""
    what = f"mcpServers.{SERVER_NAME} and Live Memory's hook"
    hooks = (home / HOOK_DIR_NAME, HOOK_FILES)
    return files.uninstall_all(path, text, left, what, hooks, (instructions_dir, NOTE_FILE, AGENT_KEY))


def connection(home: Path) -> tuple[str, str | None] | None:
    """(URL, token variable) of the installed entry; None when Gemini CLI has none of Live Memory's."""
    try:
        server = Document(files.read_text(home / "settings.json")).get(["mcpServers", SERVER_NAME])
    except (ConfigError, JsoncError):
        return None
    if not _is_our_server(server) or not isinstance(server.get("httpUrl"), str):
        return None
    token = TOKEN_REFERENCE.search(str((server.get("headers") or {}).get("Authorization", "")))
    return server["httpUrl"], token.group(1) if token else None


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


def _parse(text: str, path: Path) -> Document:
    try:
        document = Document(text)
    except JsoncError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it and run again") from None
    if document.value is not None and not isinstance(document.value, dict):
        raise ConfigError(f"{path} must hold a JSON object, got {type(document.value).__name__}; fix it and run again")
    return document


def _object(document: Document, key: str, path: Path) -> dict[str, Any] | None:
    """``key`` of the settings, a JSON object or absent (None); anything else is refused."""
    value = document.get([key])
    if value is not None and not isinstance(value, dict):
        raise ConfigError(f"{path}: {key} must be a JSON object, got {type(value).__name__}; fix it and run again")
    return value


def _put_ours(document: Document, server: dict[str, Any], hook: dict[str, Any] | None, path: Path) -> None:
    """Our server entry and hook group in ``document``, replaced in place when there, else added last."""
    servers = _object(document, "mcpServers", path) or {}
    if SERVER_NAME in servers and not _is_our_server(servers[SERVER_NAME]):
        raise ConfigError(
            f"{path} already defines mcpServers.{SERVER_NAME} by hand; remove that entry (Live Memory writes"
            " its own) and run install again"
        )
    hooks = _object(document, "hooks", path)
    groups = hooks.get("AfterTool") if hooks is not None else None
    if groups is not None and not isinstance(groups, list):
        raise ConfigError(f"{path}: hooks.AfterTool must be a JSON array; fix it and run again")
    if servers.get(SERVER_NAME) != server:
        document.set(["mcpServers", SERVER_NAME], server)
    ours = [i for i, group in enumerate(groups or []) if _is_our_group(group)]
    for index in reversed(ours[1:]):
        document.delete(["hooks", "AfterTool", index])
    if hook is None:
        if ours:
            _drop_group(document, ours[0])
    elif not ours:
        if groups is None:
            document.set(["hooks", "AfterTool"], [hook])
        else:
            document.append(["hooks", "AfterTool"], hook)
    elif groups is not None and groups[ours[0]] != hook:
        document.replace_item(["hooks", "AfterTool"], ours[0], hook)


def _drop_group(document: Document, index: int) -> None:
    """Remove our hook group, and the containers left empty by that (install created them)."""
    if len(document.get(["hooks", "AfterTool"])) > 1:
        document.delete(["hooks", "AfterTool", index])
    elif len(document.get(["hooks"])) > 1:
        document.delete(["hooks", "AfterTool"])
    else:
        document.delete(["hooks"])


def _take_ours(document: Document) -> None:
    if not isinstance(document.value, dict):
        return
    groups = document.get(["hooks", "AfterTool"])
    if isinstance(document.get(["hooks"]), dict) and isinstance(groups, list):
        for index in reversed([i for i, group in enumerate(groups) if _is_our_group(group)]):
            _drop_group(document, index)
    servers = document.get(["mcpServers"])
    if isinstance(servers, dict) and _is_our_server(servers.get(SERVER_NAME)):
        document.delete(["mcpServers"] if len(servers) == 1 else ["mcpServers", SERVER_NAME])
