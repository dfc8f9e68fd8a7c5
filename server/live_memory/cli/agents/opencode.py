"""Connect OpenCode to Live Memory: its MCP server entry, an optional file-feed plugin, optional instructions.

Owns three edits, each undone by `uninstall` and nothing else:
  - `mcp.live_memory` in the global `opencode.json` (a remote MCP server at the service's `/mcp`; the token
    goes through OpenCode's `{env:NAME}` substitution, so no secret is ever written);
  - with `plugin`, `plugins/live-memory.js` beside it: tees what OpenCode's read/edit/write/apply_patch tools
    touch to `POST /notify` (the Claude Code hook's event shape, secret floor and size cap);
  - with `instructions_dir`, the shared note in that repository's `AGENTS.md` (one note for Codex and OpenCode,
    `note.py`).

Never rewrites the user's other settings: the config, JSON with comments allowed as OpenCode reads it, is edited
in place at one key (`jsonc.py`): comments, compact objects and indentation stay as they were, and uninstall
gives the bytes back. Refused (before anything is written) when the file is not JSON. Idempotent: a second
install changes nothing and says so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from live_memory.cli.agents import files
from live_memory.cli.agents.jsonc import Document
from live_memory.constants import AGENT_HEADER, DEFAULT_SECRET_GLOBS
from live_memory.core.errors import ConfigError, JsoncError

SERVER_KEY = "live_memory"
AGENT_NAME = "opencode"  # what /stats counts its questions under (sent as AGENT_HEADER), and its name in the note
# OpenCode names an MCP tool <server>_<tool>.
TOOL_NAME = f"{SERVER_KEY}_ask_live_memory"
CONFIG_NAMES = ("opencode.json", "opencode.jsonc")
SCHEMA_URL = "https://opencode.ai/config.json"
PLUGIN_DIR = "plugins"
PLUGIN_NAME = "live-memory.js"
PLUGIN_SOURCE = "opencode_plugin.js"
PLUGIN_MARKER = "// Live Memory file feed for OpenCode"
# Why 300 s: OpenCode aborts an MCP call after 5 s unless told otherwise, and a cold question takes longer
# (the same bound the Claude Code plugin's .mcp.json sets).
MCP_TIMEOUT_MS = 300_000
NOTE_FILE = "AGENTS.md"  # the one note, shared with Codex (note.py)
# How install names the token in headers: OpenCode replaces {env:NAME} with that variable at start.
TOKEN_REFERENCE = re.compile(r"^Bearer \{env:([A-Za-z_][A-Za-z0-9_]*)\}$")
_URL_PLACEHOLDER = 'const INSTALLED_URL = "__LIVE_MEMORY_URL__"'
_TOKEN_PLACEHOLDER = "const TOKEN_ENV = null"
_SECRETS_PLACEHOLDER = "const SECRET_NAMES = []"


def default_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """OpenCode's global config dir: $XDG_CONFIG_HOME/opencode, else ~/.config/opencode."""
    env = os.environ if env is None else env
    home = env.get("HOME") or str(Path.home())
    return Path(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")) / "opencode"


def mcp_entry(url: str, token_env: str | None) -> dict[str, Any]:
    """The `mcp.live_memory` value: a remote server at `<url>/mcp`, the token by reference only."""
    base = files.check_install(url, token_env)
    entry: dict[str, Any] = {
        "type": "remote",
        "url": base + "/mcp",
        "timeout": MCP_TIMEOUT_MS,
        "headers": {AGENT_HEADER: AGENT_NAME},
    }
    if token_env:
        entry["headers"]["Authorization"] = f"Bearer {{env:{token_env}}}"
    return entry


def install(
    config_dir: Path, url: str, token_env: str | None, *, instructions_dir: Path | None, plugin: bool
) -> list[str]:
    """Add Live Memory to OpenCode's global config; returns one line per change (or per thing already there).
    Refused (ConfigError) before anything is written when any part cannot be done."""
    entry = mcp_entry(url, token_env)
    base = files.base_url(url)
    path = config_file(config_dir)
    text = files.read_text(path)
    document = read_config(path, text, entry)
    servers = document.get(["mcp"]) or {}
    changes = files.Changes()
    if servers.get(SERVER_KEY) == entry:
        changes.said.append(f"{path}: mcp.{SERVER_KEY} already set")
    else:
        verb = "updated" if SERVER_KEY in servers else "added"
        if document.value is None:
            document.set(["$schema"], SCHEMA_URL)
        document.set(["mcp", SERVER_KEY], entry)
        changes.write(path, document.text, default_mode=0o644)
        changes.said.append(f"{path}: {verb} mcp.{SERVER_KEY} -> {entry['url']}")
    if plugin:
        plan_plugin(changes, config_dir, base, token_env)
    if instructions_dir is not None:
        files.plan_note(changes, instructions_dir, NOTE_FILE, AGENT_NAME, install=True)
    return changes.apply()


def uninstall(config_dir: Path, *, instructions_dir: Path | None) -> list[str]:
    """Remove exactly what `install` added: the MCP entry, our plugin file, our name in the AGENTS.md note."""
    changes = files.Changes()
    path = config_file(config_dir)
    text = files.read_text(path)
    # Why the text check first: a file that cannot be read as JSON but never had our entry is no reason to refuse.
    if f'"{SERVER_KEY}"' in text:
        document = read_config(path, text, None)
        servers = document.get(["mcp"])
        if isinstance(servers, dict) and SERVER_KEY in servers:
            document.delete(["mcp"] if len(servers) == 1 else ["mcp", SERVER_KEY])
            if document.value in ({}, {"$schema": SCHEMA_URL}):
                changes.remove(path)
                changes.said.append(f"{path}: removed (it held only the Live Memory entry)")
            else:
                changes.write(path, document.text, default_mode=0o644)
                changes.said.append(f"{path}: removed mcp.{SERVER_KEY}")
    plan_plugin_removal(changes, config_dir)
    if instructions_dir is not None:
        files.plan_note(changes, instructions_dir, NOTE_FILE, AGENT_NAME, install=False)
    if not changes.files and not any("left alone" in line for line in changes.said):
        return [f"{config_dir}: nothing of Live Memory's to remove"]
    return changes.apply()


def connection(config_dir: Path) -> tuple[str, str | None] | None:
    """(URL, token variable) of the installed entry; None when OpenCode has no Live Memory entry."""
    try:
        entry = Document(files.read_text(config_file(config_dir))).get(["mcp", SERVER_KEY])
    except (ConfigError, JsoncError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        return None
    token = TOKEN_REFERENCE.search(str((entry.get("headers") or {}).get("Authorization", "")))
    return entry["url"], token.group(1) if token else None


# ------------------------------------------------------------------------------------------------ config


def config_file(config_dir: Path) -> Path:
    """The global config OpenCode reads: opencode.json, else an existing opencode.jsonc, else a new .json."""
    for name in CONFIG_NAMES:
        if (config_dir / name).exists():
            return config_dir / name
    return config_dir / CONFIG_NAMES[0]


def read_config(path: Path, text: str, entry: Mapping[str, Any] | None) -> Document:
    """The config as an editable document (comments and trailing commas allowed, as OpenCode reads it); refuses
    a file that is not JSON, or whose `mcp` is not an object."""
    try:
        document = Document(text)
    except JsoncError as exc:
        raise ConfigError(refusal(path, f"{path} is not valid JSON ({exc})", entry)) from None
    if document.value is not None and not isinstance(document.value, dict):
        raise ConfigError(refusal(path, f"{path}: the config is not a JSON object", entry))
    if document.get(["mcp"]) is not None and not isinstance(document.get(["mcp"]), dict):
        raise ConfigError(refusal(path, f'{path}: "mcp" is not an object', entry))
    return document


def refusal(path: Path, why: str, entry: Mapping[str, Any] | None) -> str:
    """Why a config is left alone, and (for an install) what to add by hand."""
    if entry is None:
        return f'{why}; remove "{SERVER_KEY}" from its "mcp" object by hand'
    snippet = json.dumps({SERVER_KEY: entry}, indent=2)
    return f'{why}; add this to its "mcp" object by hand, or fix the file and run this again:\n{snippet}'


# ------------------------------------------------------------------------------------------------ plugin


def plugin_text(url: str, token_env: str | None) -> str:
    """The packaged plugin with the service's URL and the token's variable name filled in."""
    source = resources.files("live_memory.cli.agents").joinpath(PLUGIN_SOURCE).read_text(encoding="utf-8")
    if any(source.count(p) != 1 for p in (_URL_PLACEHOLDER, _TOKEN_PLACEHOLDER, _SECRETS_PLACEHOLDER)):
        raise RuntimeError(f"the packaged {PLUGIN_SOURCE} lacks its install placeholders")
    filled = source.replace(_URL_PLACEHOLDER, f"const INSTALLED_URL = {json.dumps(url.strip().rstrip('/'))}")
    filled = filled.replace(_TOKEN_PLACEHOLDER, f"const TOKEN_ENV = {json.dumps(token_env)}")
    # The secret floor is the server's own list (the names: the plugin matches a file name, not a path).
    names = [glob for glob in DEFAULT_SECRET_GLOBS if "/" not in glob]
    return filled.replace(_SECRETS_PLACEHOLDER, f"const SECRET_NAMES = {json.dumps(names)}")


def plan_plugin(changes: files.Changes, config_dir: Path, url: str, token_env: str | None) -> None:
    target = config_dir / PLUGIN_DIR / PLUGIN_NAME
    wanted = plugin_text(url, token_env)
    if target.exists():
        current = target.read_text(encoding="utf-8", errors="replace")
        if not current.startswith(PLUGIN_MARKER):
            raise ConfigError(f"{target} exists and is not Live Memory's plugin; move it away, then install again")
        if current == wanted:
            changes.said.append(f"{target}: file feed plugin already installed")
            return
    changes.write(target, wanted, default_mode=0o644)
    changes.said.append(f"{target}: installed the file feed plugin")


def plan_plugin_removal(changes: files.Changes, config_dir: Path) -> None:
    target = config_dir / PLUGIN_DIR / PLUGIN_NAME
    try:
        ours = target.read_text(encoding="utf-8", errors="replace").startswith(PLUGIN_MARKER)
    except FileNotFoundError:
        return
    if not ours:
        changes.said.append(f"{target}: left alone (not Live Memory's plugin)")
        return
    changes.remove(target)
    changes.empty_dirs.append(target.parent)  # the plugins dir goes too when nothing else is in it
    changes.said.append(f"{target}: removed the file feed plugin")
