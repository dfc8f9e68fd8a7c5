"""Service packaging: systemd units rendered and installed from the packaged templates, the env file, the
deploy/ links, and the /health waiter (deploy/wait-for-health.py) as a real subprocess against real sockets."""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from live_memory import constants as C
from live_memory.cli.service_install import (
    ENV_TEMPLATE,
    PROVIDER_ENV,
    UNIT_NAME,
    UNIT_TEMPLATES,
    InstallReport,
    install_service,
    plan_install,
    render_unit,
    template_text,
)
from live_memory.core.errors import ConfigError
from live_memory.deploy_templates import wait_for_health
from live_memory.settings.config import load_settings
from live_memory.testing.live_server import LiveServer, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.off_loop import off_loop

REPO = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = REPO / "server" / "live_memory" / "deploy_templates"
WAIT_SCRIPT = REPO / "deploy" / "wait-for-health.py"
# deploy/ file -> its source of truth in the package
DEPLOY_COPIES = {
    "live-memory.user.service": "live-memory.user.service",
    "live-memory.service": "live-memory.service",
    "live-memory.env.example": "live-memory.env.example",
    "wait-for-health.py": "wait_for_health.py",
}
HARDENING = ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=read-only", "PrivateTmp=yes")
ME = pwd.getpwuid(os.getuid()).pw_name


# --- helpers ---------------------------------------------------------------------------------------------------


def unit_values(text: str) -> dict[str, list[str]]:
    """Key -> every value it is given in a unit file (comments skipped)."""
    values: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith(("#", ";", "[")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values.setdefault(key.strip(), []).append(value.strip())
    return values


def make_executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def venv_bin(tmp_path: Path) -> Path:
    """A fake venv bin/ holding `live-memory` (never executed by these tests) and `python`."""
    bin_dir = tmp_path / "venv" / "bin"
    make_executable(bin_dir / "live-memory", "raise SystemExit('not to be run')\n")
    (bin_dir / "python").symlink_to(sys.executable)
    return bin_dir


def fake_systemctl(tmp_path: Path, *, fail_on: str = "") -> tuple[Path, Path]:
    """A real executable that appends its argv (one JSON list a line) to a log; exits 1 when `fail_on` is an arg."""
    log = tmp_path / "systemctl-calls.jsonl"
    script = make_executable(
        tmp_path / "fakebin" / "systemctl",
        "import json, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"if {fail_on!r} and {fail_on!r} in sys.argv[1:]:\n"
        "    print('Failed to connect to bus: No medium found', file=sys.stderr)\n"
        "    sys.exit(1)\n",
    )
    return script, log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def user_install(tmp_path: Path, venv_bin: Path, **kwargs: Any) -> InstallReport:
    home = tmp_path / "home"
    return install_service(
        "user",
        executable=venv_bin / "live-memory",
        unit_dir=home / ".config" / "systemd" / "user",
        env_file=home / ".config" / "live-memory" / "live-memory.env",
        environ={"HOME": str(home)},
        force=True,  # the test's paths lie under /tmp; the refusal has its own test
        **kwargs,
    )


def assert_hardened(values: dict[str, list[str]]) -> None:
    for setting in HARDENING:
        key, _, value = setting.partition("=")
        assert values[key] == [value], key


# --- rendering and installing ----------------------------------------------------------------------------------


def test_user_install_writes_a_0644_unit_that_runs_the_given_executable_hardened(
    tmp_path: Path, venv_bin: Path
) -> None:
    report = user_install(tmp_path, venv_bin, data_dir=tmp_path / "data", enable=False)
    config = tmp_path / "home" / ".config"
    unit = config / "systemd" / "user" / UNIT_NAME
    assert report.plan.unit_path == unit
    assert stat.S_IMODE(unit.stat().st_mode) == 0o644
    values = unit_values(unit.read_text())
    assert values["ExecStart"] == [f"{venv_bin / 'live-memory'} serve"]
    assert values["Restart"] == ["on-failure"]
    assert values["KillSignal"] == ["SIGTERM"]
    assert values["EnvironmentFile"] == [f"-{config / 'live-memory' / 'live-memory.env'}"]
    assert values["ReadWritePaths"] == [str(tmp_path / "data")]
    assert f"LIVE_MEMORY_DATA_DIR={tmp_path / 'data'}" in values["Environment"]
    assert values["PrivateUsers"] == ["yes"]  # the file-system sandbox of a user unit needs a user namespace
    assert values["WantedBy"] == ["default.target"]
    assert_hardened(values)
    assert not re.search(r"@[A-Z_]+@", unit.read_text())  # no placeholder left behind


def test_readiness_check_runs_the_health_module_with_the_venv_python(tmp_path: Path, venv_bin: Path) -> None:
    report = user_install(tmp_path, venv_bin, enable=False)
    (post,) = unit_values(report.plan.unit_text)["ExecStartPost"]
    argv = shlex.split(post)
    assert Path(argv[0]).resolve() == Path(sys.executable).resolve()
    assert argv[1:4] == ["-I", "-m", "live_memory.deploy_templates.wait_for_health"]
    assert "--strict" in argv


def test_env_file_is_created_0600_from_the_example(tmp_path: Path, venv_bin: Path) -> None:
    report = user_install(tmp_path, venv_bin, enable=False)
    env_file = tmp_path / "home" / ".config" / "live-memory" / "live-memory.env"
    assert report.env_file_created
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert env_file.read_text() == template_text(ENV_TEMPLATE)


def test_an_existing_env_file_is_never_overwritten(tmp_path: Path, venv_bin: Path) -> None:
    env_file = tmp_path / "home" / ".config" / "live-memory" / "live-memory.env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("ANTHROPIC_API_KEY=mine\n")
    env_file.chmod(0o640)
    report = user_install(tmp_path, venv_bin, enable=False)
    assert not report.env_file_created
    assert env_file.read_text() == "ANTHROPIC_API_KEY=mine\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o640


def test_data_dir_named_in_the_env_file_becomes_the_writable_path(tmp_path: Path, venv_bin: Path) -> None:
    plugin_data = tmp_path / "home" / ".claude" / "plugins" / "data" / "live-memory-shofer"
    env_file = tmp_path / "home" / ".config" / "live-memory" / "live-memory.env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(f"# plugin's data dir\nLIVE_MEMORY_DATA_DIR={plugin_data}\n")
    report = user_install(tmp_path, venv_bin, enable=False)
    assert report.plan.data_dir == plugin_data
    assert report.data_dir_created and stat.S_IMODE(plugin_data.stat().st_mode) == 0o700
    assert unit_values(report.plan.unit_text)["ReadWritePaths"] == [str(plugin_data)]


def test_data_dir_in_the_env_file_may_start_with_a_tilde(tmp_path: Path, venv_bin: Path) -> None:
    env_file = tmp_path / "home" / ".config" / "live-memory" / "live-memory.env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("LIVE_MEMORY_DATA_DIR=~/memory\n")
    report = user_install(tmp_path, venv_bin, enable=False)
    assert report.plan.data_dir == tmp_path / "home" / "memory"


def test_default_data_dir_is_the_one_the_cli_uses(tmp_path: Path, venv_bin: Path) -> None:
    report = user_install(tmp_path, venv_bin, enable=False)
    assert report.plan.data_dir == tmp_path / "home" / ".local" / "share" / "live-memory"


def test_enable_runs_daemon_reload_then_enable_now_on_the_user_manager(tmp_path: Path, venv_bin: Path) -> None:
    systemctl, log = fake_systemctl(tmp_path)
    report = user_install(tmp_path, venv_bin, systemctl=(str(systemctl),))
    assert calls(log) == [["--user", "daemon-reload"], ["--user", "enable", "--now", UNIT_NAME]]
    assert report.ok and not report.todo
    assert "daemon-reload`: ok" in str(report)


def test_system_install_runs_as_the_named_account_on_the_system_manager(tmp_path: Path, venv_bin: Path) -> None:
    systemctl, log = fake_systemctl(tmp_path)
    report = install_service(
        "system",
        executable=venv_bin / "live-memory",
        unit_dir=tmp_path / "etc-systemd",
        env_file=tmp_path / "etc-live-memory" / "live-memory.env",
        data_dir=tmp_path / "data",
        user=ME,
        systemctl=(str(systemctl),),
        environ={"HOME": str(tmp_path)},
        force=True,
    )
    assert calls(log) == [["daemon-reload"], ["enable", "--now", UNIT_NAME]]
    values = unit_values((tmp_path / "etc-systemd" / UNIT_NAME).read_text())
    assert values["User"] == [ME]
    assert values["WantedBy"] == ["multi-user.target"]
    assert "PrivateUsers" not in values  # a system unit gets namespaces without it
    assert_hardened(values)
    assert report.ok


def test_no_enable_runs_nothing_and_prints_the_commands_to_run(tmp_path: Path, venv_bin: Path) -> None:
    systemctl, log = fake_systemctl(tmp_path)
    report = user_install(tmp_path, venv_bin, enable=False, systemctl=(str(systemctl),))
    assert calls(log) == []
    assert report.todo == ("systemctl --user daemon-reload", f"systemctl --user enable --now {UNIT_NAME}")
    assert "still to run:" in str(report)


def test_missing_systemctl_is_reported_with_the_commands_to_run(tmp_path: Path, venv_bin: Path) -> None:
    report = user_install(tmp_path, venv_bin, systemctl=(str(tmp_path / "no-such-systemctl"),))
    assert report.commands == ()
    assert len(report.todo) == 2
    assert any("not found" in note for note in report.notes)
    assert (tmp_path / "home" / ".config" / "systemd" / "user" / UNIT_NAME).is_file()  # written all the same


def test_a_failing_daemon_reload_stops_before_enable_and_says_what_is_left(tmp_path: Path, venv_bin: Path) -> None:
    systemctl, log = fake_systemctl(tmp_path, fail_on="daemon-reload")
    report = user_install(tmp_path, venv_bin, systemctl=(str(systemctl),))
    assert calls(log) == [["--user", "daemon-reload"]]
    assert not report.ok
    assert report.todo[-1] == f"systemctl --user enable --now {UNIT_NAME}"
    assert "Failed to connect to bus" in str(report)
    assert any("no user manager" in note for note in report.notes)


def test_provider_variables_the_service_will_not_see_are_named_never_valued(tmp_path: Path, venv_bin: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://gw.example"}}))
    report = install_service(
        "user",
        executable=venv_bin / "live-memory",
        unit_dir=tmp_path / "units",
        env_file=tmp_path / "live-memory.env",
        enable=False,
        environ={"HOME": str(home), "ANTHROPIC_API_KEY": "sk-very-secret-value"},
        force=True,
    )
    text = str(report)
    assert "ANTHROPIC_API_KEY" in text and "ANTHROPIC_BASE_URL" in text
    assert "sk-very-secret-value" not in text and "gw.example" not in text


def test_render_refuses_paths_a_unit_file_would_split(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="whitespace"):
        render_unit("user", Path("/opt/my venv/bin/live-memory"), tmp_path / "env")
    with pytest.raises(ConfigError, match="absolute"):
        render_unit("user", Path("bin/live-memory"), tmp_path / "env")


def test_render_escapes_percent_so_systemd_does_not_expand_it(tmp_path: Path) -> None:
    text = render_unit("user", Path("/opt/100%/bin/live-memory"), tmp_path / "env")
    assert "ExecStart=/opt/100%%/bin/live-memory serve" in text


def test_render_user_unit_defaults_its_data_dir_to_the_home_specifier(tmp_path: Path) -> None:
    values = unit_values(render_unit("user", Path("/opt/lm/bin/live-memory"), tmp_path / "env"))
    assert values["ReadWritePaths"] == ["%h/.local/share/live-memory"]
    assert values["ExecStartPost"][0].startswith("/opt/lm/bin/python ")


def test_render_system_unit_needs_an_account_and_its_data_dir(tmp_path: Path) -> None:
    exe = Path("/opt/lm/bin/live-memory")
    with pytest.raises(ConfigError, match="data_dir"):
        render_unit("system", exe, tmp_path / "env", user="alice")
    with pytest.raises(ConfigError, match="user"):
        render_unit("system", exe, tmp_path / "env", data_dir=tmp_path)
    with pytest.raises(ConfigError, match="account"):
        render_unit("system", exe, tmp_path / "env", data_dir=tmp_path, user="alice;rm")


def test_plan_refuses_a_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        plan_install("user", executable=tmp_path / "nope" / "live-memory", environ={"HOME": str(tmp_path)})


def test_stop_timeout_outlasts_the_servers_graceful_shutdown() -> None:
    """Questions get SHUTDOWN_GRACE_S to answer while uvicorn waits up to SHUTDOWN_GRACE_S + 5 s for them, then
    the snapshots get SHUTDOWN_FLUSH_DEADLINE_S; SIGKILL must not land inside that."""
    shutdown_budget = (int(C.SHUTDOWN_GRACE_S) + 5) + C.SHUTDOWN_FLUSH_DEADLINE_S
    for template in UNIT_TEMPLATES.values():
        values = unit_values(template_text(template))
        assert float(values["TimeoutStopSec"][0]) > shutdown_budget + 5.0, template
        assert values["KillMode"] == ["mixed"], template


# --- systemd's own verdict -------------------------------------------------------------------------------------

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (apt-get install -y systemd)")
@pytest.mark.parametrize("mode", ["user", "system"])
def test_rendered_units_pass_systemd_analyze_verify(tmp_path: Path, venv_bin: Path, mode: str) -> None:
    assert SYSTEMD_ANALYZE is not None
    data = tmp_path / "data"
    data.mkdir()
    text = render_unit(
        "user" if mode == "user" else "system",
        venv_bin / "live-memory",
        tmp_path / "live-memory.env",
        data_dir=data,
        user=ME if mode == "system" else None,
        python=Path(sys.executable),
    )
    unit = tmp_path / "units" / UNIT_NAME
    unit.parent.mkdir()
    unit.write_text(text)
    runtime = tmp_path / "runtime"  # the --user verifier wants a runtime dir
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    scope = ["--user"] if mode == "user" else []
    done = subprocess.run(
        [SYSTEMD_ANALYZE, *scope, "verify", str(unit)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == ""  # systemd warns (rc 0) about unknown keys and bad values


# --- single source of truth ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("deploy_name", "package_name"), sorted(DEPLOY_COPIES.items()))
def test_deploy_files_are_links_to_the_package_templates(deploy_name: str, package_name: str) -> None:
    link = REPO / "deploy" / deploy_name
    assert link.is_symlink(), "deploy/ is generated from the templates: run `make deploy-files`"
    assert link.resolve() == (TEMPLATES_DIR / package_name).resolve()


def test_every_template_is_found_through_the_package() -> None:
    for name in (*UNIT_TEMPLATES.values(), ENV_TEMPLATE):
        assert template_text(name) == (TEMPLATES_DIR / name).read_text()


def test_non_python_templates_are_declared_package_data_so_wheels_ship_them() -> None:
    """Setuptools puts only .py files (and py.typed) into a wheel unless package-data names the rest."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject.get("tool", {}).get("setuptools", {}).get("package-data", {}).get("live_memory", [])
    for path in TEMPLATES_DIR.iterdir():
        if path.suffix != ".py" and path.is_file():
            relative = f"deploy_templates/{path.name}"
            assert any(fnmatch(relative, pattern) for pattern in patterns), relative


def test_env_example_names_every_provider_variable_with_nothing_filled_in() -> None:
    text = template_text(ENV_TEMPLATE)
    named = set(re.findall(r"^#?([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))
    required = set(PROVIDER_ENV) | {
        "LIVE_MEMORY_DATA_DIR",
        "LIVE_MEMORY_PORT",
        "LIVE_MEMORY_HOST",
        "LIVE_MEMORY_AUTH_TOKEN",
        "LIVE_MEMORY_LOG_FILE",
        "LIVE_MEMORY_ALLOWED_ROOTS",
        "ANTHROPIC_AUTH_TOKEN",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
    }
    assert required <= named, sorted(required - named)
    assert not re.findall(r"^[A-Z][A-Z0-9_]+=", text, flags=re.MULTILINE)  # every assignment commented out
    for key, value in re.findall(r"^#([A-Z][A-Z0-9_]*(?:KEY|TOKEN))=(.*)$", text, flags=re.MULTILINE):
        assert value == "", key


# --- the /health waiter ----------------------------------------------------------------------------------------


def run_waiter(*args: str, env_extra: dict[str, str] | None = None, timeout_s: float = 30.0) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVE_MEMORY_")}
    env.update(env_extra or {})
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(WAIT_SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout_s
    )
    return done.returncode, done.stderr, time.monotonic() - started


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that refuses connections at once: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_waiter_exits_0_within_its_bound_when_nothing_listens(refused_url: str) -> None:
    code, err, elapsed = run_waiter("--url", refused_url, "--timeout", "0.1")
    assert code == 0
    assert elapsed < 0.1 + 5.0  # the bound plus interpreter start-up
    assert err.count("\n") == 1 and "no healthy Live Memory" in err


def test_waiter_strict_exits_1_when_nothing_listens(refused_url: str) -> None:
    code, err, _ = run_waiter("--url", refused_url, "--timeout", "0", "--strict")  # one probe, no waiting
    assert code == 1 and "no healthy Live Memory" in err


def test_waiter_reports_a_live_server_healthy(tmp_path: Path) -> None:
    with FakeLLM() as fake, live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        code, err, _ = run_waiter("--strict", "--timeout", "5", env_extra={"LIVE_MEMORY_URL": server.mcp_url})
    assert code == 0
    assert f"healthy at {server.url} (version " in err


def test_waiter_takes_a_server_without_a_credential_as_ready(tmp_path: Path) -> None:
    """/health says "degraded" then; the server serves (and says what to set), so the unit must start."""
    settings = off_loop(load_settings, env={"HOME": str(tmp_path), "LIVE_MEMORY_OAUTH": "0"}, data_dir=tmp_path / "d")
    with live_server(settings) as server:
        code, err, _ = run_waiter("--strict", "--timeout", "5", env_extra={"LIVE_MEMORY_URL": server.mcp_url})
    assert code == 0, err
    assert f"healthy at {server.url} (version " in err


def test_unit_readiness_command_passes_against_a_live_server_on_the_env_port(tmp_path: Path, venv_bin: Path) -> None:
    """The exact ExecStartPost argv, with the env the unit hands the server (port from the env file)."""
    text = render_unit("user", venv_bin / "live-memory", tmp_path / "env", python=Path(sys.executable))
    (post,) = unit_values(text)["ExecStartPost"]
    argv = shlex.split(post.replace("%%", "%"))
    with FakeLLM() as fake, live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVE_MEMORY_")}
        env.update({"LIVE_MEMORY_PORT": str(server.port), "LIVE_MEMORY_DATA_DIR": str(tmp_path / "data")})
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "healthy at http://127.0.0.1:" in done.stderr


def test_waiter_does_not_take_another_program_for_live_memory() -> None:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "service": "something-else"})

    with LiveServer(Starlette(routes=[Route("/health", health)])) as other:
        code, err, _ = run_waiter("--url", other.url, "--timeout", "0", "--strict")  # one probe, no waiting
    assert code == 1 and "no healthy Live Memory" in err


FAKE_SERVE = """\
import json, os, sys, threading
from http.server import BaseHTTPRequestHandler, HTTPServer

assert sys.argv[1:] == ["serve"], sys.argv


class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok", "service": "live-memory", "version": "fake", "pid": os.getpid()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", int(os.environ["LIVE_MEMORY_PORT"])), Health)
with open(os.environ["FAKE_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
threading.Timer(60, lambda: os._exit(0)).start()  # never outlive the test run for long
server.serve_forever()
"""


def test_waiter_start_launches_serve_detached_and_waits_for_health(tmp_path: Path) -> None:
    exe = make_executable(tmp_path / "bin" / "live-memory", FAKE_SERVE)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pidfile = tmp_path / "serve.pid"
    env = {"LIVE_MEMORY_PORT": str(port), "FAKE_PIDFILE": str(pidfile), "HOME": str(tmp_path)}
    try:
        code, err, _ = run_waiter("--start", "--executable", str(exe), "--timeout", "15", env_extra=env)
        assert code == 0, err
        assert f"started `{exe} serve`" in err and f"healthy at http://127.0.0.1:{port} after" in err
        pid = int(pidfile.read_text())
        assert os.getsid(pid) == pid  # its own session: a hook runner's group kill cannot reach it
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_waiter_start_reports_a_serve_that_exits_with_an_error_before_the_bound(
    tmp_path: Path, refused_url: str
) -> None:
    exe = make_executable(tmp_path / "bin" / "live-memory", "import sys\nsys.exit(3)\n")
    code, err, elapsed = run_waiter("--url", refused_url, "--start", "--executable", str(exe), "--timeout", "20")
    assert code == 0
    assert "exited with code 3" in err
    assert elapsed < 20.0  # it stopped waiting as soon as the child died


def test_server_url_follows_env_then_config_json_then_default(tmp_path: Path) -> None:
    url = wait_for_health.server_url
    assert url({"LIVE_MEMORY_URL": "http://127.0.0.1:9000/mcp"}) == "http://127.0.0.1:9000"
    assert url({"LIVE_MEMORY_HOST": "0.0.0.0", "LIVE_MEMORY_PORT": "7799"}) == "http://127.0.0.1:7799"
    assert url({"LIVE_MEMORY_HOST": "::1", "LIVE_MEMORY_DATA_DIR": str(tmp_path)}) == "http://[::1]:7711"
    (tmp_path / "config.json").write_text(json.dumps({"port": 7801}))
    assert url({"LIVE_MEMORY_DATA_DIR": str(tmp_path)}) == "http://127.0.0.1:7801"
    assert url({"LIVE_MEMORY_DATA_DIR": str(tmp_path), "LIVE_MEMORY_PORT": "7802"}) == "http://127.0.0.1:7802"
    assert url({"LIVE_MEMORY_DATA_DIR": str(tmp_path)}, "http://h:1/") == "http://h:1"


# --- what the sandbox would hide, and the unit's own guarantees --------------------------------------------------


@pytest.fixture
def tmp_checkout_venv() -> Iterator[Path]:
    """A venv bin/ under /tmp, as a checkout cloned there would have: its `live-memory` runs this CLI."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="lm-venv-", dir="/tmp"))
    bin_dir = root / "venv" / "bin"
    make_executable(bin_dir / "live-memory", "import sys\nfrom live_memory.cli.main import main\nsys.exit(main())\n")
    try:
        yield bin_dir
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_install_from_under_tmp_is_refused_because_private_tmp_hides_it(tmp_checkout_venv: Path) -> None:
    with pytest.raises(ConfigError, match=r"PrivateTmp=yes.*--force"):
        plan_install(
            "user",
            executable=tmp_checkout_venv / "live-memory",
            data_dir=Path.home() / "lm-data",
            environ={"HOME": str(Path.home())},
        )


def test_install_service_cli_refuses_tmp_without_force_and_warns_with_it(tmp_checkout_venv: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO)])}
    argv = [str(tmp_checkout_venv / "live-memory"), "install-service", "--print", "--data-dir", str(Path.home())]
    refused = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
    assert refused.returncode == 2
    assert "PrivateTmp" in refused.stderr and "--force" in refused.stderr and "Traceback" not in refused.stderr
    forced = subprocess.run([*argv, "--force"], capture_output=True, text=True, env=env, timeout=30)
    assert forced.returncode == 0, forced.stderr
    assert f"ExecStart={tmp_checkout_venv / 'live-memory'} serve" in forced.stdout
    assert "warning (--force)" in forced.stderr


@pytest.mark.parametrize("mode", ["user", "system"])
def test_units_raise_the_open_file_limit_to_the_documented_value(tmp_path: Path, mode: str) -> None:
    text = render_unit(
        "user" if mode == "user" else "system",
        Path("/opt/lm/bin/live-memory"),
        Path("/etc/lm.env"),
        data_dir=Path("/srv/lm-data"),
        user=ME if mode == "system" else None,
    )
    assert unit_values(text)["LimitNOFILE"] == ["65536"]
    assert "LimitNOFILE=65536" in (REPO / "docs" / "operations.md").read_text()


def test_user_unit_creates_a_missing_data_dir_private_before_the_sandbox_needs_it(tmp_path: Path) -> None:
    data = tmp_path / "share" / "live-memory"
    text = render_unit("user", Path("/opt/lm/bin/live-memory"), Path("/etc/lm.env"), data_dir=data)
    (pre,) = unit_values(text)["ExecStartPre"]
    assert pre.startswith("+")  # outside the sandbox: ReadWritePaths= needs the directory to exist
    subprocess.run(shlex.split(pre[1:]), check=True, timeout=30)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


# --- packaging ---------------------------------------------------------------------------------------------------


def _third_party_imports() -> set[str]:
    import ast

    names: set[str] = set()
    for path in (REPO / "server" / "live_memory").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "live_memory"}


def test_every_directly_imported_package_is_declared() -> None:
    from importlib.metadata import packages_distributions

    def normal(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {
        normal(re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0])
        for spec in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    owners = packages_distributions()
    missing = {
        module: owners.get(module, [module])
        for module in _third_party_imports()
        if not any(normal(dist) in declared for dist in owners.get(module, [module]))
    }
    assert not missing, f"imported but not declared in [project.dependencies]: {missing}"


def test_project_metadata_has_a_license_file_urls_and_a_dev_extra_built_on_test() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert {"Homepage", "Repository", "Issues"} <= set(project["urls"])
    assert "live-memory[test]" in project["optional-dependencies"]["dev"]
    for spec in project["optional-dependencies"]["test"]:
        assert spec not in project["optional-dependencies"]["dev"]  # reused, not copied


def test_docs_point_only_at_files_that_exist() -> None:
    docs = [REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")]
    for doc in docs:
        assert "DESIGN.md" not in doc.read_text(encoding="utf-8"), f"{doc.name} points at a DESIGN.md"
