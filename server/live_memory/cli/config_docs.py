"""Render docs/configuration.md from the one options table (`options.Options`, as `options.OPTIONS`).

`python -m live_memory.cli.config_docs > docs/configuration.md` regenerates it; a test fails when the
committed file differs, so an option cannot go undocumented.
"""

from __future__ import annotations

from live_memory import constants as C
from live_memory.constants import MCP_PATH
from live_memory.providers.profiles import PROFILES
from live_memory.settings.options import CONFIG_FILE, OPTIONS

HEADER = f"""# Configuration reference

Every option resolves **environment variable > `{CONFIG_FILE}` in the data dir > default**.
Set one in the environment (`LIVE_MEMORY_<KEY>`), or in `{CONFIG_FILE}` (`live-memory config set key=value`
writes the running server's own `{CONFIG_FILE}` through `POST /config` and applies it at once; options read only
at start are stored and apply at the next start; an environment variable still wins over the file, and the
answer says so). `live-memory config show` prints the running server's effective values with their sources
(`GET /config`); secrets are masked. Lists are comma-separated in the environment and JSON
arrays in `{CONFIG_FILE}`. Invalid values stop the server at start with a message naming the key and where
the value came from.

The data dir itself is `LIVE_MEMORY_DATA_DIR`, else `CLAUDE_PLUGIN_DATA`, else
`$XDG_DATA_HOME/live-memory` (`~/.local/share/live-memory`); it holds `{CONFIG_FILE}`, `workspaces/*.json`
snapshots and `spend.json`.

This file is generated from `server/live_memory/settings/options.py` by `python -m live_memory.cli.config_docs`.
"""


# The order lives in client.py (the CLI), hooks/_client.py (the plugin's scripts) and wait_for_health.py (the
# readiness check); tests/plugin/test_server_url.py checks that the three agree with each other and with this.
CLIENT_URL = f"""## Where clients find the server

`host` and `port` are where the server listens. The command line (`live-memory ask`, `stats`, `config`,
`doctor`, ...), the plugin's hooks, slash commands and status line, and `deploy/wait-for-health.py` all find
the server in one order; the first that is set wins:

1. a URL given on the command line (`live-memory ask --url`, `wait-for-health.py --url`);
2. `LIVE_MEMORY_URL`;
3. `CLAUDE_PLUGIN_OPTION_SERVER_URL`: the plugin's `server_url` option, as Claude Code hands it to the
   plugin's scripts (`docs/claude-code.md`);
4. `http://HOST:PORT`, each from `LIVE_MEMORY_HOST` / `LIVE_MEMORY_PORT`, else `{CONFIG_FILE}` in the data dir,
   else `{C.DEFAULT_HOST}` / `{C.DEFAULT_PORT}`. A wildcard host (`0.0.0.0`, `::`) is reached on loopback, an
   IPv6 address in brackets.

`${{VAR}}` and `${{VAR:-default}}` in a URL are expanded; a trailing `/` or `{MCP_PATH}` is dropped. The MCP
connection itself is Claude Code's: it always uses the plugin's `server_url` option. `live-memory serve`
checks its own address (`host`, `port`) for a server already running there.
"""


def _default(value: object) -> str:
    if isinstance(value, tuple):
        return "`" + ", ".join(value) + "`" if value else "(empty)"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == "":
        return "(empty)"
    return f"`{value}`"


def render() -> str:
    lines = [
        HEADER,
        "| key (`config.json`) | environment | type | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for option in OPTIONS:
        default = "(secret, none)" if option.secret else _default(option.default)
        doc = option.doc.replace("|", "/") + (
            " *Read at start: a change applies at the next start.*" if option.restart else ""
        )
        lines.append(f"| `{option.key}` | `{option.env}` | {option.kind} | {default} | {doc} |")
    lines += ["", "## Provider profiles (`provider`)", ""]
    lines.append("| profile | protocol | base URL | default model | key variables |")
    lines.append("| --- | --- | --- | --- | --- |")
    for profile in PROFILES.values():
        keys = ", ".join(f"`{k}`" for k in profile.key_envs) or "none"
        base = f"`{profile.base_url}`" if profile.base_url else "(set `base_url`)"
        lines.append(f"| `{profile.name}` | {profile.protocol} | {base} | `{profile.default_model}` | {keys} |")
    lines += [
        "",
        "A custom `base_url` never receives a profile's own key variable; give it `api_key` explicitly. The",
        "provider's own base-URL variable (for example `ANTHROPIC_BASE_URL`) keeps its key variable.",
        "",
        CLIENT_URL,
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
