"""The hook's secret floor (stdlib-only, so it keeps its own list) must cover the server's defaults."""

from __future__ import annotations

import importlib.util
import sys
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


def test_config_command_masks_exactly_the_options_marked_secret() -> None:
    """/live-memory:config cannot import the package, so it keeps the secret keys; they must match the table."""
    from live_memory.options import OPTIONS

    spec = importlib.util.spec_from_file_location("slash_hook_under_test", HOOK.parent / "slash_commands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HOOK.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HOOK.parent))
    assert set(module.SECRET_KEYS) == {o.key for o in OPTIONS if o.secret}
