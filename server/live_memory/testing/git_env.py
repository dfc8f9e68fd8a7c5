"""An environment for git children in tests and benchmarks: no user or system configuration, a fixed author,
UTC and the C locale, so that the same commands make the same commits everywhere."""

from __future__ import annotations

import os
from pathlib import Path


def git_env(home: Path) -> dict[str, str]:
    """An environment where git reads no user/system config and behaves the same everywhere."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("HOME", "XDG_CONFIG_HOME")}
    keep.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "Ada Example",
            "GIT_AUTHOR_EMAIL": "ada@example.invalid",
            "GIT_COMMITTER_NAME": "Ada Example",
            "GIT_COMMITTER_EMAIL": "ada@example.invalid",
            "LC_ALL": "C",
            "TZ": "UTC",
        }
    )
    return keep
