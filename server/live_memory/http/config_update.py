"""`POST /config`: validate `{key: value}` with the options table and write the server's own config.json.

The write is atomic (the old file, or none, is kept for a rollback when the reload refuses the result, e.g.
compaction_floor above compaction_threshold). What the route then answers per key: applied now, deferred to
the next start (options read once at start: `Option.restart`), or overridden by an environment variable.
Blocking file I/O: the route runs these functions in a thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_memory.core.errors import ConfigError
from live_memory.fs.safe_files import atomic_write, ensure_private_dir
from live_memory.settings.config import Settings, file_value, read_config_file
from live_memory.settings.options import CONFIG_FILE, OPTIONS_BY_KEY, changed_options


def validate_changes(body: Mapping[str, Any]) -> dict[str, object]:
    """Each value cast by its option's caster; the first bad key raises a ConfigError naming it."""
    if not body:
        raise ConfigError('nothing to set: send {"key": value}, e.g. {"max_iterations": 30}')
    return {key: file_value(key, raw) for key, raw in body.items()}


def write_changes(data_dir: Path, values: Mapping[str, object]) -> bytes | None:
    """Merge `values` into config.json (atomic, 0600); returns the previous bytes (None: there was no file)."""
    path = data_dir / CONFIG_FILE
    try:
        before: bytes | None = path.read_bytes()
    except FileNotFoundError:
        before = None
    current = read_config_file(path)
    current.update({k: list(v) if isinstance(v, tuple) else v for k, v in values.items()})
    ensure_private_dir(data_dir)
    atomic_write(path, (json.dumps(current, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
    return before


def restore(data_dir: Path, before: bytes | None) -> None:
    """Put config.json back as it was before `write_changes`."""
    path = data_dir / CONFIG_FILE
    if before is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write(path, before, mode=0o600)


def shown_values(settings: Settings) -> dict[str, str]:
    """Each row of `config show` by key, secrets masked."""
    return {key: value for key, value, _ in settings.describe()}


def outcome(values: Mapping[str, object], running: Settings, now: Settings) -> dict[str, Any]:
    """What became of each key just written: applied, deferred to the next start, or overridden by env."""
    shown = shown_values(now)
    pending = {option.key for option in changed_options(running, now) if option.restart}
    applied: list[str] = []
    deferred: list[dict[str, str]] = []
    overridden: list[dict[str, str]] = []
    for key in values:
        option = OPTIONS_BY_KEY[key]
        if option.env in now.env:
            overridden.append(
                {
                    "key": key,
                    "env": option.env,
                    "message": f"{option.env} is set in the server's environment and overrides config.json: "
                    f"{key} stays {shown[key]}",
                }
            )
        elif key in pending:
            deferred.append({"key": key, "message": f"{key} takes effect at the next start of the server"})
        else:
            applied.append(key)
    return {
        "applied": applied,
        "deferred": deferred,
        "overridden": overridden,
        "warnings": [o["message"] for o in overridden],
    }
