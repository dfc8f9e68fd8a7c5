"""`live-memory config show|get|set`: the running server's options and where each came from (its GET /config),
or this shell's when no server answers; `set` goes through the running server (it validates, writes its own
config.json and reloads), else into this shell's config.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from live_memory.cli.client import error_of, request_json
from live_memory.cli.running import running_config
from live_memory.settings.config import Settings, write_config_value


def _server_label(config: dict[str, Any]) -> str:
    return f"server (pid {config.get('process', {}).get('pid')})"


def _shell_rows(settings: Settings) -> list[tuple[str, str, str, str]]:
    return [(key, value, source, "") for key, value, source in settings.describe()]


def _server_rows(config: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = config.get("options") or []
    return [(str(r.get("key")), str(r.get("value")), str(r.get("source")), str(r.get("pending") or "")) for r in rows]


def cmd_config(settings: Settings, args: argparse.Namespace) -> int:
    if args.action == "set":
        return cmd_config_set(settings, args.item or "")
    if args.action == "get" and not args.item:
        print("usage: live-memory config get KEY   (`live-memory config show` lists the keys)", file=sys.stderr)
        return 2
    base, config = running_config(settings)
    if config is None:
        where = f"this shell (no server answers at {base}; these are the values a server started here would use)"
        rows = _shell_rows(settings)
    else:
        where = f"{_server_label(config)} at {base}"
        rows = _server_rows(config)
    if args.action == "get":
        for key, value, _, pending in rows:
            if key == args.item:
                print(value)
                print(f"live-memory: {key} of {where}" + (f"; {pending}" if pending else ""), file=sys.stderr)
                return 0
        print(f"live-memory: unknown option {args.item!r}", file=sys.stderr)
        return 2
    print(f"# {where}")
    if config is not None:
        credential = config.get("credential") or {}
        kind, source = credential.get("kind"), credential.get("source")
        print(f"# credential {kind} ({source}) · config file {config.get('config_file')}")
    width = max(len(k) for k, *_ in rows)
    for key, value, source, pending in rows:
        print(f"{key:<{width}}  {value}  [{source}]" + (f"  ({pending})" if pending else ""))
    return 0


def cmd_config_set(settings: Settings, item: str) -> int:
    """Through the running server (it validates, writes its own config.json and reloads); without one,
    into this shell's config.json."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        print("usage: live-memory config set KEY=VALUE", file=sys.stderr)
        return 2
    base, config = running_config(settings)
    if config is None:
        ensure_data_dir(settings.data_dir)
        write_config_value(settings.data_dir, key, raw)
        print(
            f"live-memory: no server answers at {base}; {key} saved to this shell's {settings.config_file} "
            "(a server started with this data dir reads it)."
        )
        return 0
    status, data = request_json(settings, "POST", "/config", body={key: raw})
    if status != 200:
        print(f"live-memory: the {_server_label(config)} refused it: {error_of(status, data)}", file=sys.stderr)
        return 1
    print(f"live-memory: {key} saved to the {_server_label(config)}'s {data.get('config_file')}")
    if key in (data.get("applied") or []):
        print(f"live-memory: {key} applies now.")
    for deferred in data.get("deferred") or []:
        print(f"live-memory: {deferred.get('message')}.")
    for warning in data.get("warnings") or []:
        print(f"live-memory: warning: {warning}", file=sys.stderr)
    return 0


def ensure_data_dir(path: Path) -> None:
    """Create the data dir private (0700) if it does not exist yet; an existing one is left as it is."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:  # created meanwhile by someone else: theirs to set
        return
    path.chmod(0o700)  # exact, whatever the umask
