"""The tree's own rules that import-linter cannot see: bench and tests stand on the package, never on each
other, and the package's root holds only what belongs above every floor."""

from __future__ import annotations

import ast
from pathlib import Path

import live_memory

PROJECT = Path(__file__).resolve().parent.parent
PACKAGE = Path(live_memory.__file__).resolve().parent


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """Each Python file under `folder` (caches aside) with the modules it imports, absolute ones only."""
    found: dict[str, set[str]] = {}
    for source in sorted(folder.rglob("*.py")):
        if ".cache" in source.parts or "__pycache__" in source.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[source.relative_to(PROJECT).as_posix()] = names
    return found


def test_the_benchmarks_import_nothing_from_the_tests() -> None:
    offenders = {
        path: sorted(name for name in names if name == "tests" or name.startswith("tests."))
        for path, names in imported_modules(PROJECT / "bench").items()
    }
    assert not {path: names for path, names in offenders.items() if names}


def test_the_tests_import_nothing_private_from_the_benchmarks() -> None:
    def private(name: str) -> bool:
        parts = name.split(".")
        return parts[0] == "bench" and any(part.startswith("_") and part != "__init__" for part in parts[1:])

    offenders = {path: sorted(filter(private, names)) for path, names in imported_modules(PROJECT / "tests").items()}
    assert not {path: names for path, names in offenders.items() if names}


def test_the_package_root_holds_only_the_entry_points_and_the_defaults() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "constants.py"]
