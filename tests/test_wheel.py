"""A wheel, installed in a fresh virtualenv outside the checkout, carries what the commands need: `live-memory
demo` runs (asking about a copy of the installed package), and `install codex|opencode|gemini` installs each
agent with its file feed, the hook scripts being the ones the agents' tests run (tests/agents).

Built once for the module from a copy of what the build reads (pyproject.toml, setup.py, server/, hooks/, ...),
with this environment's setuptools and no network (`--no-build-isolation`); the venv sees this environment's
dependencies through a .pth line (their own .pth files, such as the editable install's finder, are not read), so
`live_memory` itself comes from the wheel alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE")
STEP_TIMEOUT_S = 120
# Nothing of this machine's configuration reaches the installed commands (the module's fixture is built before
# each test's sealed environment).
SEALED = ("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "XDG_")
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Installed:
    bin: Path
    home: Path
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "live-memory"), *args],
            cwd=cwd or self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
        )


def _step(*command: str, cwd: Path | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "server", source / "server", ignore=ignore)
    shutil.copytree(REPO / "hooks", source / "hooks", ignore=ignore)
    _step(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(root), str(source))
    (wheel,) = root.glob("live_memory-*.whl")
    venv = root / "venv"
    _step(sys.executable, "-m", "venv", "--without-pip", str(venv))
    target = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (target / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    python = venv / "bin" / "python"
    _step(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel))
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(SEALED)}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    yield Installed(venv / "bin", home, env)


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed: Installed) -> None:
    done = subprocess.run(
        [str(installed.bin / "python"), "-c", "import live_memory; print(live_memory.__file__)"],
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        cwd=installed.home,
    )
    assert done.stdout.startswith(str(installed.bin.parent)), done.stdout + done.stderr


def test_demo_runs_from_a_wheel_outside_the_checkout(installed: Installed) -> None:
    done = installed.run("demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no checkout of Live Memory here: asking about a copy of the installed package" in done.stdout
    assert "tool_calls=1" in done.stdout and "tool_calls=0" in done.stdout


def test_every_agent_installs_with_its_file_feed_from_a_wheel(installed: Installed) -> None:
    repo = installed.home / "repo"
    repo.mkdir()
    for agent in ("codex", "opencode", "gemini"):
        done = installed.run("install", agent, "--instructions", str(repo))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "not installed" not in done.stdout, done.stdout
    for home in (installed.home / ".codex" / "live-memory", installed.home / ".gemini" / "live-memory"):
        scripts = sorted(p.name for p in home.iterdir())
        assert scripts, home
        for name in scripts:  # the very scripts the agents' end-to-end tests run
            assert (home / name).read_bytes() == (REPO / "hooks" / name).read_bytes(), name
    assert (installed.home / ".config" / "opencode" / "plugins" / "live-memory.js").is_file()
    assert (repo / "AGENTS.md").read_text(encoding="utf-8").count("## Live Memory") == 1
    # The installed feed runs on its own, outside the checkout: quiet and successful with no server to tell.
    hook = subprocess.run(
        ["python3", str(installed.home / ".gemini" / "live-memory" / "gemini_notify.py")],
        input='{"hook_event_name": "AfterTool", "tool_name": "read_file", "tool_input": {"file_path": "x"}}',
        env={**installed.env, "LIVE_MEMORY_URL": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        cwd=repo,
    )
    assert (hook.returncode, hook.stderr) == (0, "")
