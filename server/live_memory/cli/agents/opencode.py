"""Connect OpenCode to Live Memory: its MCP server entry, an optional file-feed plugin, optional instructions.

Owns three edits, each undone by `uninstall` and nothing else:
  - `mcp.live_memory` in the global `opencode.json` (a remote MCP server at the service's `/mcp`; the token
    goes through OpenCode's `{env:NAME}` substitution, so no secret is ever written);
  - with `plugin`, `plugins/live-memory.js` beside it: tees what OpenCode's read/edit/write/apply_patch tools
    touch to `POST /notify` (the Claude Code hook's event shape, secret floor and size cap);
  - with `instructions_dir`, a marked block in that repository's `AGENTS.md` saying when to ask.

Never overwrites the user's other settings: the config is parsed, changed at one key and written back with
every other key in its order. A file OpenCode would read as JSONC (comments, trailing commas) is refused with
the entry to add by hand, since rewriting it would drop the comments. Idempotent: a second install changes
nothing and says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from live_memory.constants import AGENT_HEADER, DEFAULT_SECRET_GLOBS
from live_memory.errors import ClientError
from live_memory.safe_files import atomic_write

SERVER_KEY = "live_memory"
AGENT_NAME = "opencode"  # what /stats counts its questions under (sent as AGENT_HEADER)
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
INSTRUCTIONS_NAME = "AGENTS.md"
BEGIN_PREFIX = "<!-- live-memory:begin"
BEGIN_MARK = BEGIN_PREFIX + " (written by live-memory; its uninstall removes this block) -->"
END_MARK = "<!-- live-memory:end -->"
_BLOCK = re.compile(re.escape(BEGIN_PREFIX) + r"[^\n]*\n.*?" + re.escape(END_MARK) + r"\n?", re.S)
_URL_PLACEHOLDER = 'const INSTALLED_URL = "__LIVE_MEMORY_URL__"'
_TOKEN_PLACEHOLDER = "const TOKEN_ENV = null"
_SECRETS_PLACEHOLDER = "const SECRET_NAMES = []"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JSONC_NOISE = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.S)

INSTRUCTIONS = f"""\
## Live Memory

Live Memory is a persistent memory of this repository, shared by every coding agent that works on it. It
learned from earlier questions and from the files agents read and edited, so asking it is much cheaper than
exploring.

- **Ask before exploring unfamiliar code or re-reading files**: where something lives, what calls it, how
  parts connect, why code is the way it is. One answer replaces several reads.
- **Do not ask** about a small file you are about to edit anyway, or about facts already in your context.
- Call `{TOOL_NAME}` with `question` (one self-contained question; include the names, paths or error text you
  have) and `cwd`: always the **absolute path of the repository root**, never a relative path.
- Use the answer's file paths and line ranges to read only the lines you need. Ignore its closing
  `[live-memory]` metadata line. If the tool is unavailable or errors, go on with your normal tools; do not
  retry in a loop.
"""


def default_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """OpenCode's global config dir: $XDG_CONFIG_HOME/opencode, else ~/.config/opencode."""
    env = os.environ if env is None else env
    home = env.get("HOME") or str(Path.home())
    return Path(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")) / "opencode"


def mcp_entry(url: str, token_env: str | None) -> dict[str, Any]:
    """The `mcp.live_memory` value: a remote server at `<url>/mcp`, the token by reference only."""
    base = url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ClientError(f"the service URL must start with http:// or https://, got {url!r}")
    entry: dict[str, Any] = {
        "type": "remote",
        "url": base if base.endswith("/mcp") else base + "/mcp",
        "timeout": MCP_TIMEOUT_MS,
        "headers": {AGENT_HEADER: AGENT_NAME},
    }
    if token_env:
        if not _ENV_NAME.fullmatch(token_env):
            raise ClientError(f"the token must be named by an environment variable, got {token_env!r}")
        entry["headers"]["Authorization"] = f"Bearer {{env:{token_env}}}"
    return entry


def install(
    config_dir: Path, url: str, token_env: str | None, *, instructions_dir: Path | None, plugin: bool
) -> list[str]:
    """Add Live Memory to OpenCode's global config; returns one line per change (or per thing already there)."""
    entry = mcp_entry(url, token_env)
    path = config_file(config_dir)
    config = read_config(path, entry)
    servers = config.setdefault("mcp", {})
    if not isinstance(servers, dict):
        raise ClientError(f'{path}: "mcp" is not an object; fix it by hand, then install again')
    if servers.get(SERVER_KEY) == entry:
        done = [f"{path}: mcp.{SERVER_KEY} already set"]
    else:
        verb = "updated" if SERVER_KEY in servers else "added"
        servers[SERVER_KEY] = entry
        write_config(path, config)
        done = [f"{path}: {verb} mcp.{SERVER_KEY} -> {entry['url']}"]
    if plugin:
        done.append(install_plugin(config_dir, url, token_env))
    if instructions_dir is not None:
        done.append(add_instructions(instructions_dir))
    return done


def uninstall(config_dir: Path, *, instructions_dir: Path | None) -> list[str]:
    """Remove exactly what `install` added: the MCP entry, our plugin file, our AGENTS.md block."""
    done: list[str] = []
    path = config_file(config_dir)
    # Why the text check first: a JSONC file that never had our entry is no reason to refuse.
    if path.exists() and f'"{SERVER_KEY}"' in path.read_text(encoding="utf-8", errors="replace"):
        config = read_config(path, None)
        servers = config.get("mcp")
        if isinstance(servers, dict) and SERVER_KEY in servers:
            del servers[SERVER_KEY]
            if not servers:
                del config["mcp"]
            if config in ({}, {"$schema": SCHEMA_URL}):
                path.unlink()
                done.append(f"{path}: removed (it held only the Live Memory entry)")
            else:
                write_config(path, config)
                done.append(f"{path}: removed mcp.{SERVER_KEY}")
    done.extend(remove_plugin(config_dir))
    if instructions_dir is not None:
        done.extend(remove_instructions(instructions_dir))
    return done or [f"{config_dir}: nothing of Live Memory's to remove"]


# ------------------------------------------------------------------------------------------------ config


def config_file(config_dir: Path) -> Path:
    """The global config OpenCode reads: opencode.json, else an existing opencode.jsonc, else a new .json."""
    for name in CONFIG_NAMES:
        if (config_dir / name).exists():
            return config_dir / name
    return config_dir / CONFIG_NAMES[0]


def read_config(path: Path, entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config as a dict in file order ({} for a missing or empty file); refuses what it cannot rewrite."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"$schema": SCHEMA_URL}
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClientError(refusal(path, text, exc, entry)) from None
    if not isinstance(config, dict):
        raise ClientError(f"{path}: the config is not a JSON object; fix it by hand, then run this again")
    return config


def refusal(path: Path, text: str, exc: json.JSONDecodeError, entry: Mapping[str, Any] | None) -> str:
    """Why a config is left alone, and (for an install) what to add by hand."""
    try:
        json.loads(_JSONC_NOISE.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))
        why = f"{path} has comments or trailing commas (JSONC), which rewriting it would lose"
    except json.JSONDecodeError:
        why = f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    if entry is None:
        return f'{why}; remove "{SERVER_KEY}" from its "mcp" object by hand'
    snippet = json.dumps({SERVER_KEY: entry}, indent=2)
    return f'{why}; add this to its "mcp" object by hand, or fix the file and run this again:\n{snippet}'


def write_config(path: Path, config: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), _mode(path))


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


def install_plugin(config_dir: Path, url: str, token_env: str | None) -> str:
    target = config_dir / PLUGIN_DIR / PLUGIN_NAME
    wanted = plugin_text(url, token_env)
    if target.exists():
        current = target.read_text(encoding="utf-8", errors="replace")
        if not current.startswith(PLUGIN_MARKER):
            raise ClientError(f"{target} exists and is not Live Memory's plugin; move it away, then install again")
        if current == wanted:
            return f"{target}: file feed plugin already installed"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, wanted.encode("utf-8"), 0o644)
    return f"{target}: installed the file feed plugin"


def remove_plugin(config_dir: Path) -> list[str]:
    target = config_dir / PLUGIN_DIR / PLUGIN_NAME
    try:
        ours = target.read_text(encoding="utf-8", errors="replace").startswith(PLUGIN_MARKER)
    except FileNotFoundError:
        return []
    if not ours:
        return [f"{target}: left alone (not Live Memory's plugin)"]
    target.unlink()
    with contextlib.suppress(OSError):  # the plugins dir goes too when nothing else is in it
        target.parent.rmdir()
    return [f"{target}: removed the file feed plugin"]


# ------------------------------------------------------------------------------------------------ AGENTS.md


def add_instructions(repository: Path) -> str:
    if not repository.is_dir():
        raise ClientError(
            f"{repository} is not a directory: pass the repository whose AGENTS.md should say when to ask"
        )
    target = repository / INSTRUCTIONS_NAME
    block = f"{BEGIN_MARK}\n{INSTRUCTIONS}{END_MARK}\n"
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    found = _BLOCK.search(text)
    if found is not None and found.group(0).rstrip("\n") == block.rstrip("\n"):
        return f"{target}: Live Memory instructions already there"
    if found is not None:
        text = text[: found.start()] + block + text[found.end() :]
    else:
        text = text.rstrip("\n") + "\n\n" + block if text.strip() else block
    atomic_write(target, text.encode("utf-8"), _mode(target))
    return f"{target}: {'updated' if found else 'added'} the Live Memory instructions"


def remove_instructions(repository: Path) -> list[str]:
    target = repository / INSTRUCTIONS_NAME
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found = _BLOCK.search(text)
    if found is None:
        return []
    parts = [part for part in (text[: found.start()].rstrip("\n"), text[found.end() :].strip("\n")) if part.strip()]
    if not parts:
        target.unlink()
        return [f"{target}: removed (it held only the Live Memory instructions)"]
    atomic_write(target, ("\n\n".join(parts) + "\n").encode("utf-8"), _mode(target))
    return [f"{target}: removed the Live Memory instructions"]


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777 if path.exists() else 0o644
