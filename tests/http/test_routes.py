"""GET/POST /config, /health without a credential, and POST /reload without a body."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx2
import pytest

from live_memory.settings.config import load_settings
from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.off_loop import off_loop


def test_without_a_credential_health_is_degraded_and_startup_says_what_to_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_OAUTH": "0"}
    settings = off_loop(load_settings, env=env, data_dir=tmp_path / "data")
    with caplog.at_level(logging.WARNING, logger="live_memory"), live_server(settings) as server:
        health = httpx2.get(server.url + "/health", timeout=10)
        config = httpx2.get(server.url + "/config", timeout=10).json()
        page = httpx2.get(server.url + "/", timeout=10).text
    assert health.status_code == 200
    assert health.json()["status"] == "degraded" and health.json()["credential"] == "missing"
    warnings = [r.getMessage() for r in caplog.records if "no model credential" in r.getMessage()]
    assert len(warnings) == 1 and "LIVE_MEMORY_API_KEY" in warnings[0] and "ANTHROPIC_API_KEY" in warnings[0]
    assert config["credential"] == {"kind": "missing", "source": "none"}
    assert "No model credential" in page and "LIVE_MEMORY_API_KEY" in page


def test_health_is_ok_with_a_credential(fake: FakeLLM, tmp_path: Path) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        health = httpx2.get(server.url + "/health", timeout=10).json()
    assert (health["status"], health["credential"]) == ("ok", "api key")


def test_get_config_reports_the_servers_values_and_sources_with_secrets_masked(fake: FakeLLM, tmp_path: Path) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", api_key="sk-secret-value-9876")
    with live_server(settings) as server:
        config = httpx2.get(server.url + "/config", timeout=10).json()
    rows = {row["key"]: row for row in config["options"]}
    assert config["process"]["role"] == "server" and isinstance(config["process"]["pid"], int)
    assert config["credential"] == {"kind": "api key", "source": "env LIVE_MEMORY_API_KEY"}
    assert (config["endpoint"], config["model"]) == (fake.base_url, "claude-haiku-4-5")
    assert config["data_dir"] == str(tmp_path / "data")
    assert rows["api_key"]["value"] == "****9876" and rows["api_key"]["secret"] is True
    assert "sk-secret-value" not in json.dumps(config)
    assert rows["max_iterations"]["source"] == "default" and rows["port"]["restart"] is True


def test_post_config_writes_the_servers_own_file_and_applies_it(fake: FakeLLM, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with live_server(settings_for(fake.base_url, data)) as server:
        answer = httpx2.post(server.url + "/config", json={"max_iterations": "7", "file_globs": ["src/*"]}, timeout=10)
        config = httpx2.get(server.url + "/config", timeout=10).json()
        running = server.app.state.service.settings
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["applied"] == ["max_iterations", "file_globs"] and body["deferred"] == [] and body["warnings"] == []
    assert "max_iterations" in body["changed"]
    assert json.loads((data / "config.json").read_text()) == {"file_globs": ["src/*"], "max_iterations": 7}
    assert (data / "config.json").stat().st_mode & 0o777 == 0o600
    assert running.max_iterations == 7 and running.file_globs == ("src/*",)
    rows = {row["key"]: row for row in config["options"]}
    assert rows["max_iterations"]["value"] == "7" and rows["max_iterations"]["source"].startswith("config.json")


def test_post_config_defers_options_read_at_start_and_warns_when_env_wins(fake: FakeLLM, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with live_server(settings_for(fake.base_url, data, default_timeout_s="30")) as server:
        body = httpx2.post(server.url + "/config", json={"port": 7812, "default_timeout_s": 90}, timeout=10).json()
        rows = {row["key"]: row for row in httpx2.get(server.url + "/config", timeout=10).json()["options"]}
        timeout_now = server.app.state.service.settings.default_timeout_s
    assert body["applied"] == []
    assert body["deferred"] == [{"key": "port", "message": "port takes effect at the next start of the server"}]
    [warning] = body["warnings"]
    assert "LIVE_MEMORY_DEFAULT_TIMEOUT_S" in warning and "default_timeout_s stays 30.0" in warning
    assert timeout_now == 30.0  # the environment still wins
    assert "next start" in rows["port"]["pending"]
    assert json.loads((data / "config.json").read_text()) == {"default_timeout_s": 90.0, "port": 7812}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"max_iterations": "many"}, "invalid max_iterations: expected an integer"),
        ({"no_such_option": 1}, "unknown option 'no_such_option'"),
        ({"compaction_floor": 0.95}, "compaction_floor (0.95"),  # the file is written, the reload refuses it
        ({}, "nothing to set"),
    ],
)
def test_post_config_refuses_a_bad_value_and_leaves_the_file_as_it_was(
    fake: FakeLLM, tmp_path: Path, body: dict[str, object], expected: str
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "config.json").write_text('{"max_iterations": 9}\n')
    with live_server(settings_for(fake.base_url, data)) as server:
        answer = httpx2.post(server.url + "/config", json=body, timeout=10)
        iterations = server.app.state.service.settings.max_iterations
    assert answer.status_code == 400 and expected in answer.json()["error"]
    assert (data / "config.json").read_text() == '{"max_iterations": 9}\n' and iterations == 9


def test_reload_takes_an_empty_body_without_a_content_type(fake: FakeLLM, tmp_path: Path) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        bare = httpx2.post(server.url + "/reload", timeout=10)
        text = httpx2.post(server.url + "/reload", content=b"x", headers={"content-type": "text/plain"}, timeout=10)
    assert bare.status_code == 200 and bare.json()["reloaded"] is True
    assert text.status_code == 415
