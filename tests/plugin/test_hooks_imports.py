"""The plugin's scripts (hooks and slash commands) run with whatever Python the user has, before and
without the package: they import the standard library and each other, nothing else."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.plugin.conftest import HOOKS, REPO_ROOT

SCRIPTS = sorted([*HOOKS.glob("*.py"), *(REPO_ROOT / "commands").glob("*.py")])


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_plugin_script_imports_only_the_standard_library_and_its_siblings(script: Path) -> None:
    siblings = {p.stem for p in script.parent.glob("*.py")} | {p.stem for p in HOOKS.glob("*.py")}
    foreign = imported_roots(script) - set(sys.stdlib_module_names) - siblings - {"__future__"}
    assert not foreign, f"{script.name} imports {sorted(foreign)}: the plugin's scripts use the standard library"


def test_the_check_sees_a_package_import(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text("import json\nfrom live_memory.constants import DEFAULT_PORT\n", encoding="utf-8")
    assert imported_roots(script) - set(sys.stdlib_module_names) == {"live_memory"}
