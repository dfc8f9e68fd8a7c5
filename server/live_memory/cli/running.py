"""The running server as the command line sees it: its configuration (GET /config), and how it differs from the
settings this shell would start one with.

`serve` is an idempotent singleton: a second start with the same settings finds the server and exits 0. With
other settings (a new key, another base URL or model) the running server keeps its own until it restarts, so a
second start says what differs and how to apply it instead of "nothing to do". Secrets are compared as `config
show` prints them (masked to their last four characters), never sent or shown whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from live_memory.cli.client import error_of, not_ours, request_json, server_url, who_answers
from live_memory.core.errors import ClientError
from live_memory.settings.config import Settings

# Derived from other options (the model's context size): a difference in those is what matters.
DERIVED = frozenset({"context_tokens"})


def running_config(settings: Settings) -> tuple[str, dict[str, Any] | None]:
    """(base URL, the running server's GET /config) or (base URL, None) when no Live Memory server answers
    there; another program on the port is an error (ClientError)."""
    base = server_url(settings)
    state, _ = who_answers(base)
    if state == "foreign":
        raise ClientError(not_ours(base))
    if state == "absent":
        return base, None
    status, data = request_json(settings, "GET", "/config")
    if status != 200:
        raise ClientError(f"the server at {base} did not show its configuration: {error_of(status, data)}")
    return base, data


def differences(settings: Settings, config: Mapping[str, Any]) -> list[str]:
    """What the running server (its GET /config) holds that these settings would not, one phrase each."""
    mine = {key: value for key, value, _ in settings.describe()}
    found = []
    for row in config.get("options") or []:
        key, value = str(row.get("key")), str(row.get("value"))
        if key in mine and key not in DERIVED and mine[key] != value:
            found.append(f"{key} {value} (here: {mine[key]})")
    credential = config.get("credential") or {}
    if credential.get("source") != settings.api_key_source:
        found.append(
            f"credential {credential.get('kind')} from {credential.get('source')} (here: {settings.api_key_source})"
        )
    return found


def other_settings(settings: Settings, pid: object) -> str | None:
    """Why a second `serve` must not report "nothing to do": the running server's settings differ from these
    (None: they agree, or cannot be compared, e.g. without the bearer token it requires)."""
    try:
        _, config = running_config(settings)
    except ClientError:
        return None
    found = differences(settings, config) if config is not None else []
    if not found:
        return None
    return (
        f"a server is already running at {server_url(settings)} (pid {pid}) with other settings than this shell's: "
        f"{'; '.join(found)}. It keeps its own until it restarts: stop it (`kill {pid}`, or `systemctl --user "
        "restart live-memory` for the service, after editing its environment file) and start it again; options "
        "that apply at once can be changed with `live-memory config set KEY=VALUE`."
    )
