"""The packaged provider data file, `live_memory/data/providers.json`, read once.

Profiles, the per-model tables (context sizes, minimum cacheable prefixes), prices and the providers' cache
rules live in that one file, so the service, the fake provider of the tests and the benchmarks read the same
facts; `profiles.py` and `pricing.py` turn its sections into frozen objects. The file ships in the wheel
(package data) and is found through `importlib.resources`, so an installed package and a source tree behave
alike. Only data: no behaviour is configured here.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

DATA_PACKAGE = "live_memory"
DATA_FILE = ("data", "providers.json")


def data_file() -> Traversable:
    """Where the file is (inside a wheel, an editable install or a source tree alike)."""
    found = resources.files(DATA_PACKAGE)
    for part in DATA_FILE:
        found = found / part
    return found


@functools.cache
def provider_data() -> dict[str, Any]:
    """The parsed file; read at the first import of a table module, never again. Callers must not change it."""
    loaded = json.loads(data_file().read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise TypeError(f"{'/'.join(DATA_FILE)} must hold a JSON object, got {type(loaded).__name__}")
    return loaded
