"""The hook's secret floor (stdlib-only, so it keeps its own list) must cover the server's defaults."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from live_memory.constants import DEFAULT_SECRET_GLOBS

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "notify.py"


def test_the_hook_withholds_every_default_secret_name_the_server_does() -> None:
    spec = importlib.util.spec_from_file_location("notify_hook_under_test", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    name_patterns = {g.lower() for g in DEFAULT_SECRET_GLOBS if "/" not in g}
    missing = name_patterns - {g.lower() for g in module.SECRET_NAMES}
    assert not missing, f"hooks/notify.py SECRET_NAMES lacks {sorted(missing)}"
