"""The tree's own rules that import-linter cannot see: bench and tests stand on the package, never on each
other, and the package's root holds only what belongs above every floor."""

from __future__ import annotations

import os
import re
from pathlib import Path

import live_memory

PROJECT = Path(__file__).resolve().parent.parent
PACKAGE = Path(live_memory.__file__).resolve().parent


# An import statement at the start of a line: `import a.b`, or `from a.b import c, d` (perhaps in brackets over
# several lines). Read as text: parsing every file of the tests and benchmarks would take seconds.
_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+([\w.]+)|from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*))", re.M)


def python_files(folder: Path) -> list[Path]:
    """The Python files under `folder`, never entering a cache (the benchmarks' holds whole repositories)."""
    found = []
    for directory, subdirectories, files in os.walk(folder):
        subdirectories[:] = [name for name in subdirectories if name not in (".cache", "__pycache__")]
        found += [Path(directory, name) for name in files if name.endswith(".py")]
    return sorted(found)


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """Each Python file under `folder` (caches aside) with the modules it imports, absolute ones only, and for a
    `from` import the names it takes too (`module.name`)."""
    found: dict[str, set[str]] = {}
    for source in python_files(folder):
        names: set[str] = set()
        for match in _IMPORT.finditer(source.read_text(encoding="utf-8")):
            plain, module, taken = match.groups()
            if plain:
                names.add(plain)
                continue
            names.add(module)
            for item in taken.strip("()").replace("\n", ",").split(","):
                name = item.split("#")[0].split(" as ")[0].strip()
                if name:
                    names.add(f"{module}.{name}")
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
