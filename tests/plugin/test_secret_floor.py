"""The plugin's scripts are stdlib-only, so they keep their own copies of a few of the package's facts (the
secret names, the default port, the project header, the teed file cap); each copy must equal its source."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from live_memory.constants import DEFAULT_PORT, DEFAULT_SECRET_GLOBS, PASSIVE_MAX_FILE_BYTES, PROJECT_HEADER

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "notify.py"


def load_hook(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", HOOK.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HOOK.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HOOK.parent))
    return module


def test_the_hook_withholds_exactly_the_default_secret_names_the_server_does() -> None:
    name_patterns = {g.lower() for g in DEFAULT_SECRET_GLOBS if "/" not in g}
    hook = {g.lower() for g in load_hook("notify").SECRET_NAMES}
    assert not name_patterns - hook, f"hooks/notify.py SECRET_NAMES lacks {sorted(name_patterns - hook)}"
    assert not hook - name_patterns, f"constants.DEFAULT_SECRET_GLOBS lacks {sorted(hook - name_patterns)}"


def test_the_hooks_port_header_and_file_cap_are_the_servers() -> None:
    client = load_hook("_client")
    assert int(client.DEFAULT_PORT) == DEFAULT_PORT
    assert client.PROJECT_HEADER.lower() == PROJECT_HEADER.lower()
    assert client.MAX_FILE_BYTES == PASSIVE_MAX_FILE_BYTES


def test_config_command_masks_exactly_the_options_marked_secret() -> None:
    """/live-memory:config cannot import the package, so it keeps the secret keys; they must match the table."""
    from live_memory.settings.options import OPTIONS

    module = load_hook("slash_commands")
    assert set(module.SECRET_KEYS) == {o.key for o in OPTIONS if o.secret}
