"""`live-memory doctor` and `live-memory config` describe the running server when one answers (and say which
process each line describes), and fall back to this shell's own configuration when none does."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from live_memory.cli.agents import codex
from live_memory.cli.main import main
from live_memory.settings.config import load_settings
from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.testing.off_loop import off_loop
from live_memory.testing.ports import free_port
from tests.fakes.process_logging import restored_logging


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str], *argv: str
) -> tuple[int, str, str]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with restored_logging():
        code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def shell_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    """A shell with its own data dir (not the server's) and no credential."""
    return {"LIVE_MEMORY_PORT": str(port), "LIVE_MEMORY_DATA_DIR": str(tmp_path / "shell-data"), **extra}


def doctor_in(checkout: Path) -> tuple[str, ...]:
    return ("doctor", "--cwd", str(checkout))


def test_config_show_and_get_describe_the_running_server_not_this_shell(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data", max_iterations=11)) as server:
        env = shell_env(tmp_path, server.port)
        code, out, _ = run_cli(monkeypatch, capsys, env, "config", "show")
        got, value, said = run_cli(monkeypatch, capsys, env, "config", "get", "max_iterations")
    assert code == 0 and got == 0
    assert out.splitlines()[0] == f"# server (pid {os.getpid()}) at {server.url}"
    assert "# credential api key (env LIVE_MEMORY_API_KEY)" in out
    lines = {line.split()[0]: line for line in out.splitlines() if not line.startswith("#")}
    assert "11  [env LIVE_MEMORY_MAX_ITERATIONS]" in lines["max_iterations"]
    assert lines["data_dir"].split()[1] == str(tmp_path / "data")
    assert value == "11\n" and f"server (pid {os.getpid()})" in said


def test_config_show_without_a_server_says_it_describes_this_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, 9), "config", "show")
    assert code == 0
    assert out.startswith("# this shell (no server answers at http://127.0.0.1:9")
    assert str(tmp_path / "shell-data") in out


def test_config_set_goes_through_the_running_server(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    with live_server(settings_for(fake.base_url, data, default_timeout_s="40")) as server:
        env = shell_env(tmp_path, server.port)
        code, out, _ = run_cli(monkeypatch, capsys, env, "config", "set", "max_iterations=12")
        port_code, port_out, _ = run_cli(monkeypatch, capsys, env, "config", "set", f"port={server.port + 1}")
        env_code, _, warned = run_cli(monkeypatch, capsys, env, "config", "set", "default_timeout_s=90")
        running = server.app.state.service.settings
    assert (code, port_code, env_code) == (0, 0, 0)
    assert f"saved to the server (pid {os.getpid()})'s {data / 'config.json'}" in out and "applies now" in out
    assert "port takes effect at the next start" in port_out
    assert "LIVE_MEMORY_DEFAULT_TIMEOUT_S" in warned and "stays 40.0" in warned
    assert running.max_iterations == 12 and running.default_timeout_s == 40.0
    saved = json.loads((data / "config.json").read_text())
    assert saved == {"default_timeout_s": 90.0, "max_iterations": 12, "port": server.port + 1}
    assert not (tmp_path / "shell-data" / "config.json").exists()  # this shell's own file is untouched


def test_config_set_without_a_server_writes_this_shells_file_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, 9), "config", "set", "max_iterations=5")
    assert code == 0 and "no server answers at http://127.0.0.1:9" in out and "this shell's" in out
    assert json.loads((tmp_path / "shell-data" / "config.json").read_text()) == {"max_iterations": 5}


def test_doctor_checks_the_servers_credential_and_data_dir_not_this_shells(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, server.port), *doctor_in(tmp_path))
    where = f"server pid {os.getpid()}"
    assert code == 0, out
    assert f"[ok  ] credential ({where}): anthropic: api key from env LIVE_MEMORY_API_KEY" in out
    assert f"[ok  ] data dir ({where}): {tmp_path / 'data'}" in out
    assert f"[ok  ] model round trip ({where}): claude-haiku-4-5 at {fake.base_url} answered" in out  # the server's
    assert f"[ok  ] checkout ({where}): {tmp_path} may be asked about" in out
    assert "[ok  ] configuration (this shell)" in out


def test_doctor_fails_when_the_server_has_no_credential_even_if_this_shell_has_one(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = off_loop(load_settings, env={"HOME": str(tmp_path), "LIVE_MEMORY_OAUTH": "0"}, data_dir=tmp_path / "d")
    with live_server(settings) as server:
        env = shell_env(tmp_path, server.port, LIVE_MEMORY_API_KEY="shell-key", LIVE_MEMORY_BASE_URL=fake.base_url)
        code, out, _ = run_cli(monkeypatch, capsys, env, "doctor", "--offline")
    assert code == 1
    assert f"[FAIL] credential (server pid {os.getpid()}): the server has none" in out
    assert "in the server's environment, not this shell's" in out


def test_doctor_fails_naming_the_dead_model_url_only_the_server_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with live_server(settings_for(dead, tmp_path / "data")) as server:  # this shell has no key: the server's is checked
        code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, server.port), *doctor_in(tmp_path))
    assert code == 1
    assert re.search(
        rf"\[FAIL\] model round trip \(server pid \d+\): anthropic: connection failed to {dead}/v1/messages", out
    )
    assert "LIVE_MEMORY_BASE_URL" in out and "all 1" not in out


def test_doctor_fails_on_a_wrong_key_held_only_by_the_service(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.script(Reply.error(401, "invalid x-api-key", error_type="authentication_error"))
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, server.port), *doctor_in(tmp_path))
    assert code == 1
    assert "[FAIL] model round trip (server pid" in out and "the API key was rejected (HTTP 401" in out
    assert "test-key" not in out  # the key itself is never shown


def test_doctor_fails_for_a_checkout_outside_the_allowed_roots(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    settings = settings_for(fake.base_url, tmp_path / "data", allowed_roots=str(tmp_path / "allowed"))
    with live_server(settings) as server:
        code, out, _ = run_cli(monkeypatch, capsys, shell_env(tmp_path, server.port), *doctor_in(outside))
    assert code == 1
    assert f"[FAIL] checkout (server pid {os.getpid()}): cwd '{outside}' is outside the allowed roots" in out
    assert "LIVE_MEMORY_ALLOWED_ROOTS" in out


def test_doctor_without_a_server_checks_the_checkout_against_this_shells_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = shell_env(tmp_path, free_port(), LIVE_MEMORY_ALLOWED_ROOTS=str(tmp_path / "allowed"))
    code, out, _ = run_cli(monkeypatch, capsys, env, "doctor", "--offline", "--cwd", str(tmp_path))
    assert code == 1 and "[FAIL] checkout (this shell): cwd" in out and "outside the allowed roots" in out


def test_doctor_fails_when_this_shell_or_an_installed_agent_lacks_the_token_the_server_requires(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data", auth_token="s3cret-token")) as server:
        env = shell_env(tmp_path, server.port, HOME=str(tmp_path))
        assert codex.install(codex.codex_home(env), server.url, "LIVE_MEMORY_AUTH_TOKEN", instructions_dir=None)
        code, out, _ = run_cli(monkeypatch, capsys, env, *doctor_in(tmp_path), "--offline")
        with_token = {**env, "LIVE_MEMORY_AUTH_TOKEN": "s3cret-token"}
        fixed, fine, _ = run_cli(monkeypatch, capsys, with_token, *doctor_in(tmp_path), "--offline")
    assert code == 1
    assert "[FAIL] token (this shell): the server at" in out and "has no LIVE_MEMORY_AUTH_TOKEN" in out
    assert "[FAIL] agent codex (this shell): LIVE_MEMORY_AUTH_TOKEN is not set in this shell: codex started" in out
    assert fixed == 0, fine
    assert f"[ok  ] agent codex (this shell): {server.url}/mcp, bearer token from $LIVE_MEMORY_AUTH_TOKEN" in fine
    assert "s3cret-token" not in out + fine
