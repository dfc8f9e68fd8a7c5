"""One order for where the server is. The CLI (live_memory.cli.client), the plugin's scripts (hooks/_client.py,
stdlib only) and deploy/wait-for-health.py (stdlib only) each resolve it; whatever the environment and the
data dir's config.json say, all three must land on the same URL, in the documented order."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli.client import server_url
from live_memory.deploy_templates import wait_for_health
from live_memory.settings.config import load_settings
from tests.plugin.conftest import REPO_ROOT
from tests.plugin.test_secret_floor import load_hook

Resolver = Callable[[Mapping[str, str], str], str]

URLS = {
    "LIVE_MEMORY_URL": "http://url.example:1/mcp/",
    "CLAUDE_PLUGIN_OPTION_SERVER_URL": "http://127.0.0.1:${LIVE_MEMORY_PORT:-7711}",
}
HOSTS = (None, "::1", "0.0.0.0", "localhost")
PORTS = (None, "7802")
CONFIG_FILES: tuple[dict[str, object] | None, ...] = (None, {"port": 7801}, {"host": "[::1]", "port": 7803})
DATA_DIR_VARIABLES = ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA", "XDG_DATA_HOME")


def package(env: Mapping[str, str], explicit: str = "") -> str:
    return server_url(load_settings(env=env), explicit)


@functools.cache
def hook_client() -> Any:
    return load_hook("_client")


def hooks(env: Mapping[str, str], explicit: str = "") -> str:
    assert not explicit, "the hooks take no URL argument"
    url: str = hook_client().server_url(env)
    return url


def waiter(env: Mapping[str, str], explicit: str = "") -> str:
    return wait_for_health.server_url(env, explicit)


def environments(home: Path) -> Iterator[dict[str, str]]:
    """Every mix of the sources: URL variables, host and port variables, a config.json found through each of the
    data dir's variables, or none."""
    for with_url, with_option, host, port, config, data_var in itertools.product(
        (False, True), (False, True), HOSTS, PORTS, CONFIG_FILES, DATA_DIR_VARIABLES
    ):
        env = {"HOME": str(home)}
        if with_url:
            env["LIVE_MEMORY_URL"] = URLS["LIVE_MEMORY_URL"]
        if with_option:
            env["CLAUDE_PLUGIN_OPTION_SERVER_URL"] = URLS["CLAUDE_PLUGIN_OPTION_SERVER_URL"]
        if host is not None:
            env["LIVE_MEMORY_HOST"] = host
        if port is not None:
            env["LIVE_MEMORY_PORT"] = port
        root = home / f"{data_var}-{json.dumps(config, sort_keys=True)}"
        data_dir = root / "live-memory" if data_var == "XDG_DATA_HOME" else root
        if config is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            (data_dir / "config.json").write_text(json.dumps(config))
        env[data_var] = str(root)
        yield env


def test_the_cli_the_hooks_and_the_health_waiter_find_the_server_at_the_same_url(tmp_path: Path) -> None:
    checked = 0
    for env in environments(tmp_path):
        expected = package(env)
        assert hooks(env) == expected, f"hooks/_client.py disagrees with the package for {env}"
        assert waiter(env) == expected, f"wait_for_health.py disagrees with the package for {env}"
        assert waiter(env, "http://explicit:2/") == package(env, "http://explicit:2/") == "http://explicit:2"
        checked += 1
    assert checked == 2 * 2 * len(HOSTS) * len(PORTS) * len(CONFIG_FILES) * len(DATA_DIR_VARIABLES)


@pytest.mark.parametrize("resolve", [package, hooks, waiter], ids=["package", "hooks", "wait-for-health"])
def test_the_first_source_that_is_set_wins_in_the_documented_order(resolve: Resolver, tmp_path: Path) -> None:
    """--url, LIVE_MEMORY_URL, the plugin's server_url option, LIVE_MEMORY_HOST/PORT, config.json, the default:
    each step is taken away in turn and the next one shows."""
    (tmp_path / "config.json").write_text(json.dumps({"host": "config.example", "port": 7801}))
    env = {
        "HOME": str(tmp_path),
        "LIVE_MEMORY_DATA_DIR": str(tmp_path),
        "LIVE_MEMORY_URL": "http://url.example:1/",
        "CLAUDE_PLUGIN_OPTION_SERVER_URL": "http://option.example:${LIVE_MEMORY_PORT:-7711}/mcp",
        "LIVE_MEMORY_HOST": "0.0.0.0",
        "LIVE_MEMORY_PORT": "7802",
    }
    if resolve is not hooks:
        assert resolve(env, "http://explicit:2/mcp") == "http://explicit:2"
    assert resolve(env, "") == "http://url.example:1"
    del env["LIVE_MEMORY_URL"]
    assert resolve(env, "") == "http://option.example:7802"
    del env["CLAUDE_PLUGIN_OPTION_SERVER_URL"]
    assert resolve(env, "") == "http://127.0.0.1:7802"  # a wildcard host is reached on loopback
    del env["LIVE_MEMORY_HOST"], env["LIVE_MEMORY_PORT"]
    assert resolve(env, "") == "http://config.example:7801"
    (tmp_path / "config.json").unlink()
    assert resolve(env, "") == "http://127.0.0.1:7711"


def test_the_configuration_reference_documents_the_same_order() -> None:
    text = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text.split("## Where clients find the server", 1)[1]
    steps = ["--url", "LIVE_MEMORY_URL", "CLAUDE_PLUGIN_OPTION_SERVER_URL", "LIVE_MEMORY_HOST", "config.json", "7711"]
    positions = [section.index(step) for step in steps]
    assert positions == sorted(positions), f"docs/configuration.md lists the sources out of order: {steps}"
