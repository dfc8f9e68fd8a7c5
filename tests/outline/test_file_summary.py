"""What a file does in a few lines, without a model call (file_summary.py): the first paragraph of its docstring,
its imports, its classes and functions with their lines and the first line of their docs."""

from __future__ import annotations

from live_memory.constants import SUMMARY_DOC_CHARS
from live_memory.outline.file_summary import module_doc, summary

STORE = '''"""Keeps snapshots on disk.

Written atomically; never read on the event loop."""

from __future__ import annotations

import json
from pathlib import Path

LIMIT = 3


class Store:
    """A directory of snapshots."""

    def save(self, data: dict) -> None:
        """Write one snapshot atomically."""
        Path("x").write_text(json.dumps(data))


def load(path):
    return json.loads(Path(path).read_text())
'''


def test_a_python_file_is_summed_up_by_its_docstring_imports_and_documented_definitions() -> None:
    text = summary("src/store.py", STORE)
    assert text.splitlines() == [
        "### src/store.py (22 lines): what it holds",
        "Keeps snapshots on disk.",  # the first paragraph only
        "Imports: json, pathlib",  # not __future__
        "- class Store  13-18: A directory of snapshots.",
        "  - def save(self, data: dict) -> None  16-18: Write one snapshot atomically.",
        "- def load(path)  21-22",  # no docstring: its line alone; no module constants
    ]


def test_a_markdown_file_is_summed_up_by_the_text_under_its_title_and_its_headings() -> None:
    text = summary("docs/guide.md", "# Guide\n\nHow to run it.\nIn one minute.\n\n## Install\nsteps\n")
    assert text.splitlines()[1] == "How to run it. In one minute."
    assert "  - ## Install  6-7" in text


def test_a_long_description_is_cut_and_a_file_without_one_has_none() -> None:
    long = '"""' + "word " * 200 + '"""\n'
    assert len(module_doc("a.py", long)) == SUMMARY_DOC_CHARS and module_doc("a.py", long).endswith("…")
    assert module_doc("a.py", "x = 1\n") == ""
    assert module_doc("a.py", "#!/usr/bin/env python\n# coding: utf-8\n'''Tool.'''\n") == "Tool."
