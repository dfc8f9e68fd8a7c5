"""Connect OpenAI's Codex CLI to Live Memory: its MCP server entry, its file-feed hook, its AGENTS.md note.

Owns the text of three places and nothing else in them:
  - ``$CODEX_HOME/config.toml`` (``~/.codex/config.toml``): one block between the marker lines, holding the
    ``[mcp_servers.live_memory]`` table (streamable HTTP by ``url``; the token, when there is one, by the
    *name* of an environment variable, ``bearer_token_env_var``: Codex refuses an inline ``bearer_token``)
    and, when the hook scripts are at hand, a ``[[hooks.PostToolUse]]`` group that runs
    ``hooks/codex_notify.py`` after Codex's shell and ``apply_patch`` tools;
  - ``$CODEX_HOME/live-memory/``: a copy of the hook scripts (a path that outlives the checkout they came from);
  - ``<repository>/AGENTS.md``, only when asked: a marked note telling the agent when to ask Live Memory.

The user's own bytes are never rewritten: ``tomllib`` reads and validates, and the write replaces or appends
only the marked block. After every edit the file is parsed again and must mean exactly what it meant before,
apart from our entries; anything else (a hand-written ``[mcp_servers.live_memory]``, an inline
``hooks = {...}`` our tables cannot extend, invalid TOML) is refused with a message that says what to fix.

Never writes the token itself, and never trusts the hook on the user's behalf: Codex runs a user hook only
after its definition was reviewed (``/hooks`` in the Codex TUI), so install says to do that once.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_memory.cli.agents import files
from live_memory.cli.agents.files import HOOK_DIR_NAME, HOOKS_SOURCE
from live_memory.constants import AGENT_HEADER
from live_memory.core.errors import ConfigError

BEGIN = "# added by live-memory install codex"
END = "# end of live-memory install codex"
SERVER_NAME = "live_memory"
AGENT_NAME = "codex"  # what /stats counts its questions under (sent as AGENT_HEADER)
# Live Memory's soft deadline plus its queueing fit well inside this; Codex's default (60 s) may not.
TOOL_TIMEOUT_S = 300
# Each tee gives up after ~1 s (hooks/notify.py); the margin covers a slow python start.
HOOK_TIMEOUT_S = 5
# Codex names its shell tool "Bash" in hook payloads and its edit tool "apply_patch".
HOOK_MATCHER = "^(Bash|apply_patch)$"
HOOK_FILES = ("codex_notify.py", "notify.py", "_client.py")
NOTE_FILE = "AGENTS.md"  # the one note, shared with OpenCode (note.py)


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """Where Codex keeps its config: ``$CODEX_HOME``, else ``~/.codex`` (Codex's own rule)."""
    env = os.environ if env is None else env
    configured = env.get("CODEX_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".codex"


def install(
    home: Path,
    url: str,
    token_env: str | None,
    *,
    instructions_dir: Path | None,
    hooks_source: Path | None = HOOKS_SOURCE,
) -> list[str]:
    """Add (or bring up to date) Live Memory in the Codex home ``home``; returns what changed, in words.

    ``url`` is the service's base URL (``/mcp`` is added); ``token_env`` names the environment variable that
    holds its bearer token (None: no token). ``instructions_dir``: the repository whose AGENTS.md gets the
    note (None: AGENTS.md is left alone). ``hooks_source``: the folder of the hook scripts (None or missing:
    no hook). Idempotent: a second run changes nothing and says so. Refused (ConfigError) before anything is
    written when any part cannot be done."""
    base = files.check_install(url, token_env)
    hooked = files.has_hooks(hooks_source, HOOK_FILES)
    hook_command = _hook_command(home, base, token_env) if hooked else None
    config = home / "config.toml"
    text = files.read_text(config)
    new_text = _with_block(text, _render_block(base + "/mcp", token_env, hook_command), config)
    changes = files.Changes()
    files.plan_config(
        changes,
        config,
        text,
        new_text,
        [f"{config}: [mcp_servers.{SERVER_NAME}] url = {base}/mcp" + _token_note(token_env)],
    )
    if hooks_source is not None and hooked:
        files.plan_hooks(changes, hooks_source, home / HOOK_DIR_NAME, HOOK_FILES)
        if new_text != text:
            changes.said.append(
                f"{config}: [[hooks.PostToolUse]] tees Bash reads and apply_patch edits to {base}/notify;"
                " Codex runs it only once you trust it: open `codex`, type /hooks and trust it"
            )
        if (home / "hooks.json").is_file():
            changes.said.append(f"note: {home / 'hooks.json'} exists too; Codex warns when hooks come from both files")
    else:
        changes.said.append(files.NO_HOOK)
    if instructions_dir is not None:
        files.plan_note(changes, instructions_dir, NOTE_FILE, AGENT_NAME, install=True)
    return changes.apply()


def uninstall(home: Path, *, instructions_dir: Path | None) -> list[str]:
    """Remove what :func:`install` added, and only that; returns what changed, in words. Refused before anything
    is removed when any part cannot be done."""
    config = home / "config.toml"
    text = files.read_text(config)
    new_text = _without_block(text, config)
    what = f"[mcp_servers.{SERVER_NAME}] and Live Memory's hook"
    hooks = (home / HOOK_DIR_NAME, HOOK_FILES)
    return files.uninstall_all(config, text, new_text, what, hooks, (instructions_dir, NOTE_FILE, AGENT_NAME))


def connection(home: Path) -> tuple[str, str | None] | None:
    """(URL, token variable) of the installed entry; None when Codex has no Live Memory entry (or no config)."""
    try:
        data = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    entry = data.get("mcp_servers", {}).get(SERVER_NAME)
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        return None
    token_env = entry.get("bearer_token_env_var")
    return entry["url"], token_env if isinstance(token_env, str) else None


# ------------------------------------------------------------------------------------------ config.toml


def _token_note(token_env: str | None) -> str:
    return f", bearer token from ${token_env}" if token_env else ""


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string (ASCII, \" \\ \n \uXXXX escapes) is a valid TOML basic string


def _hook_command(home: Path, base: str, token_env: str | None) -> str:
    script = home / HOOK_DIR_NAME / "codex_notify.py"
    env = f"LIVE_MEMORY_URL={shlex.quote(base)} "
    if token_env:
        env += f'LIVE_MEMORY_AUTH_TOKEN="${{{token_env}:-}}" '
    return f"{env}python3 {shlex.quote(str(script))}"


def _render_block(mcp_url: str, token_env: str | None, hook_command: str | None) -> str:
    lines = [BEGIN, f"[mcp_servers.{SERVER_NAME}]", f"url = {_toml_str(mcp_url)}"]
    if token_env:
        lines.append(f"bearer_token_env_var = {_toml_str(token_env)}")
    lines.append(f"http_headers = {{ {_toml_str(AGENT_HEADER)} = {_toml_str(AGENT_NAME)} }}")
    lines.append(f"tool_timeout_sec = {TOOL_TIMEOUT_S}")
    if hook_command is not None:
        lines += [
            "",
            "[[hooks.PostToolUse]]",
            f"matcher = {_toml_str(HOOK_MATCHER)}",
            "[[hooks.PostToolUse.hooks]]",
            'type = "command"',
            f"command = {_toml_str(hook_command)}",
            f"timeout = {HOOK_TIMEOUT_S}",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it (or move it away) and run install again") from exc


def _find_block(text: str, path: Path) -> tuple[int, int] | None:
    """(start, end) character offsets of our block, its end marker line included; None when absent."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise ConfigError(
            f"{path} has damaged Live Memory markers ({BEGIN!r} ... {END!r} must appear once each, in order);"
            " remove Live Memory's lines by hand and run install again"
        )
    start = sum(len(line) for line in lines[: begins[0]])
    return start, sum(len(line) for line in lines[: ends[0] + 1])


def _ours(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without our MCP entry and our hook group (tables left empty by that are dropped)."""
    data = copy.deepcopy(data)
    servers = data.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop(SERVER_NAME, None)
    hooks = data.get("hooks")
    groups = hooks.get("PostToolUse") if isinstance(hooks, dict) else None
    if isinstance(hooks, dict) and isinstance(groups, list):
        kept = [g for g in groups if not _is_our_group(g)]
        if kept:
            hooks["PostToolUse"] = kept
        else:
            hooks.pop("PostToolUse")
    for key in ("mcp_servers", "hooks"):
        if data.get(key) == {}:
            del data[key]
    return data


def _is_our_group(group: Any) -> bool:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and any(
        isinstance(h, dict) and f"{HOOK_DIR_NAME}/codex_notify.py" in str(h.get("command", "")) for h in handlers
    )


def _with_block(text: str, block: str, path: Path) -> str:
    before = _parse(text, path)
    span = _find_block(text, path)
    if span is None:
        if isinstance(before.get("mcp_servers"), dict) and SERVER_NAME in before["mcp_servers"]:
            raise ConfigError(
                f"{path} already defines [mcp_servers.{SERVER_NAME}] by hand; remove that table (Live Memory"
                " writes its own, between marker comments) and run install again"
            )
        user_text = text
        new_text = files.appended(text, block)
    else:
        user_text = files.remove_span(text, span)
        new_text = text[: span[0]] + block + text[span[1] :]
    after = _parse_ours(new_text, path)
    if _ours(after) != _ours(_parse(user_text, path)):
        raise ConfigError(
            f"{path}: adding Live Memory's tables would change your own settings (e.g. keys written after the"
            " Live Memory block, or an inline `hooks` table); move them above the block and run install again"
        )
    return new_text


def _parse_ours(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: Live Memory's [mcp_servers.{SERVER_NAME}] / [[hooks.PostToolUse]] tables cannot be added"
            f" to this file ({exc}); an inline `mcp_servers = {{...}}` or `hooks = {{...}}` has to become"
            " [tables] first"
        ) from exc


def _without_block(text: str, path: Path) -> str:
    span = _find_block(text, path)
    if span is None:
        return text
    new_text = files.remove_span(text, span)
    if _ours(_parse(new_text, path)) != _ours(_parse(text, path)):
        raise ConfigError(
            f"{path}: removing Live Memory's block would change your own settings (keys follow its end marker"
            " without a table header); move them above the block and run uninstall again"
        )
    return new_text
