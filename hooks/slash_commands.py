#!/usr/bin/env python3
"""The /live-memory:stats|reset|empty|config commands, answered by a UserPromptExpansion hook.

Why a hook and not the command body: a command's expanded text (and any `!cmd` output) is sent to the
model. This hook instead performs the action, then blocks the prompt with the result as the `reason`,
which Claude Code shows to the user only: no model turn, nothing enters the model's context.

  /live-memory:stats                  GET /stats?cwd=<project>, formatted for a terminal
  /live-memory:reset                  POST /reset  (drop this repo's memory, re-read preload docs now)
  /live-memory:empty                  POST /empty  (same wipe, preload happens on the next question)
  /live-memory:config [show]          where the plugin connects + the server's model and config.json
  /live-memory:config set key=value   POST /config (the server validates, writes its own config.json, applies it)

Also a terminal tool: `python3 hooks/slash_commands.py stats|reset|empty|config [args]` prints the same text.
Stdlib only, python3 >= 3.8, never imports the server package, always exits 0.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # why: PYTHONSAFEPATH would hide _client

import _client

PLUGIN = "live-memory"
COMMANDS = ("stats", "reset", "empty", "config")
# Why 1 s: like every hook, a read-only command stays snappy even when the server is stuck.
QUERY_TIMEOUT_S = 1.0
# Why longer: reset re-loads the workspace (preload globs) before it answers.
WIPE_TIMEOUT_S = 10.0
HOOK_DEADLINE_S = 12.0
# Why longer than a query: the server writes its config.json and reloads (it may rebuild the provider).
CONFIG_SET_TIMEOUT_S = 5.0
BAR_WIDTH = 20
CONFIG_FILE = "config.json"
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
# The server options marked secret (Option.secret in live_memory/settings/options.py): masked when shown. This
# script cannot import the package, so it keeps the list; a test checks it against the options table.
SECRET_KEYS = frozenset({"api_key", "auth_token", "team_store"})


# ----------------------------------------------------------------------------------------- formatting


def human_tokens(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            text = f"{n / size:.1f}"
            return (text[:-2] if text.endswith(".0") else text) + suffix
    return str(int(n))


def duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or seconds < 0:
        return "?"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if days:
        return f"{days}d {hours % 24}h"
    if hours:
        return f"{hours}h {minutes % 60}m"
    return f"{minutes}m"


def ago(unix_seconds: Any, now: float | None = None) -> str:
    if not isinstance(unix_seconds, (int, float)) or unix_seconds <= 0:
        return "never"
    now = time.time() if now is None else now
    return duration(max(0.0, now - unix_seconds)) + " ago"


def fill_bar(ratio: float, width: int = BAR_WIDTH) -> str:
    ratio = min(1.0, max(0.0, ratio))
    filled = round(ratio * width)
    return "[" + "█" * filled + "░" * (width - filled) + "]"


def money(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "n/a"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def plural(n: Any, word: str, many: str = "") -> str:
    count = n if isinstance(n, int) else 0
    return f"{count} {word if count == 1 else (many or word + 's')}"


def server_line(server: Mapping[str, Any]) -> str:
    parts = [str(server[k]) for k in ("provider", "model") if server.get(k)]
    if server.get("credential") == "missing":
        parts.append("NO CREDENTIAL (answers explain what to set)")
    if "uptime_s" in server:
        parts.append("up " + duration(server.get("uptime_s")))
    if server.get("version"):
        parts.append("v" + str(server["version"]))
    return "  server    " + " · ".join(parts)


def format_stats(data: Mapping[str, Any], now: float | None = None) -> str:
    """The stats block shown to the user (fill bar, cost, questions, files, last compaction)."""
    ws, server = _client.obj(data.get("workspace")), _client.obj(data.get("server"))
    fill = _client.obj(ws.get("fill"))
    ratio = _client.number(fill.get("ratio"))
    lines = [f"Live Memory · {ws.get('workspace', '?')}"]
    lines.append(
        f"  context   {fill_bar(ratio)} {ratio * 100:3.0f}%  "
        f"{human_tokens(fill.get('used_tokens'))} / {human_tokens(fill.get('total_tokens'))} tokens"
    )
    cost = f"  cost      {money(ws.get('cost_usd'))} · {plural(ws.get('questions_answered'), 'question')} answered"
    if isinstance(ws.get("cache_read_share"), (int, float)) and ws.get("questions_answered"):
        cost += f" · {ws['cache_read_share'] * 100:.0f}% of prompt tokens from cache"
    lines.append(cost)
    files = f"{plural(ws.get('file_contexts'), 'file')}"
    if ws.get("stale_files"):
        files += f" ({ws['stale_files']} stale)"
    facts = plural(ws.get("ledger_facts"), "fact")
    if ws.get("stale_ledger_facts"):
        facts += f" ({ws['stale_ledger_facts']} stale)"
    lines.append(f"  memory    {files} · {ws.get('qa_retained', 0)} Q&A retained · {facts}")
    compactions = ws.get("compactions")
    compacted = "  compacted never"
    if isinstance(compactions, int) and compactions > 0:
        compacted = f"  compacted {compactions}× · last {ago(ws.get('last_compaction_at'), now)}"
    if ws.get("summaries_written"):
        compacted += f" · {plural(ws['summaries_written'], 'summary', 'summaries')} written"
    lines.append(compacted)
    saved = ws.get("estimated_tokens_saved")
    if isinstance(saved, (int, float)) and saved > 0:
        lines.append(f"  saved     ~{human_tokens(saved)} tokens of re-reading (estimate)")
    elif isinstance(saved, (int, float)) and saved < 0:  # its own spend outweighed the reading it spared
        lines.append(f"  saved     nothing yet: its own tokens exceed the reading it spared by ~{human_tokens(-saved)}")
    if ws.get("in_flight") or ws.get("queue_depth"):
        busy = f"  busy      {plural(ws.get('in_flight'), 'question')} in flight"
        if ws.get("queue_depth"):
            busy += f" · {ws['queue_depth']} waiting"
        lines.append(busy)
    if server:
        lines.append(server_line(server))
    return "\n".join(lines)


def unreachable(url: str) -> str:
    return (
        f"Live Memory is not answering at {url}.\n"
        "  Start it with `live-memory serve` (or run it as a service: see deploy/ in the repository),\n"
        "  or point the plugin elsewhere: /plugin configure live-memory@shofer (server_url)."
    )


def refused(status: int, data: dict[str, Any] | None, url: str) -> str:
    if status == 0:
        return unreachable(url)
    if status in (401, 403):
        return (
            f"Live Memory at {url} refused the request ({status}): set the plugin's auth_token "
            "(or LIVE_MEMORY_AUTH_TOKEN) to the service's token."
        )
    message = (data or {}).get("error") or "unexpected answer"
    return f"Live Memory at {url} answered {status}: {message}"


# ----------------------------------------------------------------------------------------- commands


def cmd_stats(root: str) -> str:
    url = _client.server_url()
    status, data = _client.request("GET", "/stats", query={"cwd": root}, timeout=QUERY_TIMEOUT_S)
    if status == 200 and data is not None:
        return format_stats(data)
    if status == 404:
        _, everything = _client.request("GET", "/stats", timeout=QUERY_TIMEOUT_S)
        lines = [f"Live Memory · {root}", "  not loaded yet: the first question about this repository loads it."]
        server = (everything or {}).get("server")
        if isinstance(server, dict):
            lines.append(server_line(server))
        return "\n".join(lines)
    return refused(status, data, url)


DROPPED_LABELS = {"qa_pairs": "Q&A pairs", "ledger_facts": "facts", "file_contexts": "files"}


def dropped_summary(dropped: Any) -> str:
    if not isinstance(dropped, dict) or not dropped:
        return "nothing"
    return ", ".join(f"{value} {DROPPED_LABELS.get(key, key.replace('_', ' '))}" for key, value in dropped.items())


def cmd_wipe(root: str, route: str) -> str:
    url = _client.server_url()
    status, data = _client.request("POST", route, {"cwd": root}, timeout=WIPE_TIMEOUT_S)
    if status != 200 or data is None:
        return refused(status, data, url)
    what = "reset (preload documents re-read)" if route == "/reset" else "emptied"
    return f"Live Memory {what}: {data.get('workspace', root)}\n  dropped: {dropped_summary(data.get('dropped'))}"


def masked(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    if key in SECRET_KEYS and text:
        return "****" + text[-4:] if len(text) > 8 else "****"
    return text


def config_path(server: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    """The server's config.json: as the server reports it, else where the server looks by default.

    Why not CLAUDE_PLUGIN_DATA: that is this hook's directory; the externally supervised service
    resolves LIVE_MEMORY_DATA_DIR, else $XDG_DATA_HOME/live-memory.
    """
    env = os.environ if env is None else env
    for key in ("config_file",):
        if isinstance(server.get(key), str) and server[key]:
            return str(server[key])
    if isinstance(server.get("data_dir"), str) and server["data_dir"]:
        return os.path.join(str(server["data_dir"]), CONFIG_FILE)
    if env.get("LIVE_MEMORY_DATA_DIR"):
        return os.path.join(os.path.expanduser(env["LIVE_MEMORY_DATA_DIR"]), CONFIG_FILE)
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(os.path.expanduser(xdg), "live-memory", CONFIG_FILE)


def read_config(path: str) -> tuple[dict[str, Any] | None, bytes | None]:
    """(parsed object, raw bytes); ({}, None) when the file does not exist."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}, None
    except OSError:
        return None, None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None, raw
    return (data if isinstance(data, dict) else None), raw


def server_info() -> tuple[int, dict[str, Any]]:
    status, data = _client.request("GET", "/stats", timeout=QUERY_TIMEOUT_S)
    server = (data or {}).get("server")
    return status, server if isinstance(server, dict) else {}


def cmd_config_show(root: str) -> str:
    url = _client.server_url()
    token = "set" if _client.auth_token() else "not set"
    lines = ["Live Memory configuration", f"  plugin    server {url} · auth token {token} · project {root}"]
    status, server = server_info()
    if status == 0:
        lines.append("  " + unreachable(url).replace("\n", "\n  "))
        return "\n".join(lines)
    if status != 200:
        lines.append("  " + refused(status, None, url))
        return "\n".join(lines)
    if server.get("endpoint"):
        lines.append(server_line(server) + " · " + str(server["endpoint"]))
    path = config_path(server)
    values, _ = read_config(path)
    if values is None:
        lines.append(f"  config    {path} is not a JSON object")
    elif not values:
        lines.append(f"  config    {path}: no values set (defaults and environment apply)")
    else:
        lines.append(f"  config    {path}")
        lines.extend(f"    {key} = {masked(key, values[key])}" for key in sorted(values))
    lines.append("  Change one: /live-memory:config set key=value · all values and sources: live-memory config show")
    return "\n".join(lines)


def parse_assignments(text: str) -> tuple[list[tuple[str, str]], str | None]:
    pairs: list[tuple[str, str]] = []
    for item in text.split():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not KEY_PATTERN.match(key):
            return [], f"expected key=value (a lowercase option name), got {item!r}"
        pairs.append((key, value))
    if not pairs:
        return [], "nothing to set: use /live-memory:config set key=value"
    return pairs, None


def cmd_config_set(text: str) -> str:
    """The server validates each value, writes its own config.json and applies it; this script writes nothing."""
    pairs, problem = parse_assignments(text)
    if problem:
        return "Live Memory config: " + problem
    url = _client.server_url()
    names = ", ".join(key for key, _ in pairs)
    # Why strings: every option parses its value from a string (env form), so none is ever mistyped.
    status, answer = _client.request("POST", "/config", dict(pairs), timeout=CONFIG_SET_TIMEOUT_S)
    if status == 0:
        return (
            f"Live Memory config: not changed. No server answers at {url}.\n"
            "  Start it (`live-memory serve`), or set the value where the server runs: live-memory config set key=value"
        )
    if status in (401, 403):
        return refused(status, answer, url)
    if status != 200 or answer is None:
        reason = (answer or {}).get("error") or f"the server answered {status}"
        return f"Live Memory config: not changed. {reason}"
    lines = [f"Live Memory config: {names} saved to {answer.get('config_file')}."]
    applied = answer.get("applied")
    if isinstance(applied, list) and applied:
        lines.append(f"  applied now: {', '.join(map(str, applied))}")
    for deferred in answer.get("deferred") or []:
        if isinstance(deferred, dict):
            lines.append(f"  {deferred.get('message')}")
    for warning in answer.get("warnings") or []:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)


def run(command: str, args: str, root: str) -> str:
    if command == "stats":
        return cmd_stats(root)
    if command in ("reset", "empty"):
        return cmd_wipe(root, "/" + command)
    words = args.split(None, 1)
    if not words or words[0] == "show":
        return cmd_config_show(root)
    if words[0] == "set":
        return cmd_config_set(words[1] if len(words) > 1 else "")
    return "Usage: /live-memory:config [show] | /live-memory:config set key=value"


# ----------------------------------------------------------------------------------------- entry points


def handle_hook(payload: dict[str, Any] | None) -> str | None:
    if payload is None:
        return None
    name = str(payload.get("command_name") or "")
    prefix = PLUGIN + ":"
    command = name[len(prefix) :] if name.startswith(prefix) else ""
    if command not in COMMANDS:
        return None  # not ours: let the prompt through untouched
    args = payload.get("command_args")
    text = run(command, args if isinstance(args, str) else "", _client.project_dir(payload))
    return json.dumps({"decision": "block", "reason": text})


def main(argv: list[str]) -> None:
    if len(argv) > 1:  # terminal use: print, exit 0 (1 for an unknown command)
        if argv[1] not in COMMANDS:
            print("usage: slash_commands.py stats|reset|empty|config [show | set key=value]", file=sys.stderr)
            sys.exit(1)
        print(run(argv[1], " ".join(argv[2:]), _client.project_dir()))
        return
    # Why a fallback: an unanswered hook would let the command's body through to the model.
    fallback = json.dumps(
        {"decision": "block", "reason": f"Live Memory did not answer within {HOOK_DEADLINE_S:.0f} s."}
    )
    _client.run_bounded(lambda: handle_hook(_client.read_payload()), HOOK_DEADLINE_S, fallback)


if __name__ == "__main__":
    main(sys.argv)
