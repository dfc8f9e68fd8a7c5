"""The configuration reference is generated from the options table and must be current."""

from __future__ import annotations

from pathlib import Path

from live_memory.cli.config_docs import render
from live_memory.settings.options import OPTIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_option_is_documented_in_the_committed_reference() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [o.key for o in OPTIONS if f"`{o.env}`" not in text]
    assert not missing, f"undocumented options: {missing}; run python -m live_memory.cli.config_docs > {DOC}"
    assert text == render(), f"{DOC} is stale; regenerate it with python -m live_memory.cli.config_docs"
