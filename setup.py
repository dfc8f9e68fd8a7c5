"""Build hook: a wheel carries the hook scripts the agent installers copy (`live-memory install codex|gemini`).

They live in hooks/ (the Claude Code plugin's folder, their one copy in the repository) and are stdlib-only
scripts, not modules of the package; `build_py` copies them into the built package as `live_memory/agent_hooks/`,
where `live_memory.cli.agents.files` looks first. Everything else about the build is in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
AGENT_HOOKS = ("_client.py", "notify.py", "codex_notify.py", "gemini_notify.py")


class BuildWithAgentHooks(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "live_memory" / "agent_hooks"
        self.mkpath(str(target))
        for name in AGENT_HOOKS:
            self.copy_file(str(HERE / "hooks" / name), str(target / name))


setup(cmdclass={"build_py": BuildWithAgentHooks})
