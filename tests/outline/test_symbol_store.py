"""The symbol index on disk: what it records per file and answers per word, case-sensitive mentions, replacing
and forgetting files, and that it is opened only when it can be trusted (else deleted, to be rebuilt)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from live_memory.fs.jail import Jail
from live_memory.outline.symbol_store import SCHEMA_VERSION, Stamp, SymbolStore, build_path, index_file, record_of

ROOT = "/work/repo"
MODELS = b"class Card:\n    def render(self):\n        return Card()\n\n\ndef load():\n    pass\n"


def _store(tmp_path: Path) -> SymbolStore:
    store = SymbolStore.create(tmp_path / "index.sqlite", ROOT)
    store.put([record_of("models.py", Stamp(len(MODELS), 1), MODELS), record_of("notes.md", Stamp(9, 2), b"# Cards\n")])
    store.complete()
    return store


def test_a_file_is_recorded_with_its_stamp_card_definition_lines_and_words(tmp_path: Path) -> None:
    store = _store(tmp_path)
    recorded = store.record("models.py")
    assert recorded is not None
    stamp, sha256, card = recorded
    assert stamp == Stamp(len(MODELS), 1) and len(sha256) == 64
    assert card is not None and [d.qualified for d in card.definitions] == ["Card", "Card.render", "load"]
    assert store.definition_lines("render") == [("models.py", 2, 0)]
    assert store.definition_lines("Cards") == [("notes.md", 1, 1)]  # a heading (its "#" flagged)
    assert store.mentioning("Card") == ["models.py"]
    assert store.stamps() == {"models.py": Stamp(len(MODELS), 1), "notes.md": Stamp(9, 2)}


def test_mentions_are_case_sensitive_as_the_scan_s_are(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put([record_of("upper.py", Stamp(4, 3), b"CARD = card_x\n")])
    assert store.mentioning("Card") == ["models.py"]
    assert store.mentioning("CARD") == ["upper.py"]
    assert store.mentioning("card") == []
    assert store.mentioning('quote"d') == []  # a word is matched as a phrase, never as a query


def test_recording_a_file_again_replaces_it_and_forgetting_drops_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put([record_of("models.py", Stamp(12, 5), b"def other():\n    pass\n")])
    assert store.definition_lines("render") == []
    assert store.mentioning("Card") == []
    assert store.definition_lines("other") == [("models.py", 1, 0)]
    assert store.orphans() == 1  # the replaced version's postings stay until a rebuild
    store.drop(["notes.md", "never-there.md"])
    assert sorted(store.paths()) == ["models.py"]
    store.restamp([("models.py", Stamp(12, 9))])
    assert store.stamps() == {"models.py": Stamp(12, 9)}


def test_a_complete_index_is_opened_again_for_its_own_checkout_only(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _store(tmp_path).close()
    again = SymbolStore.open(path, ROOT)
    assert again is not None and again.definition_lines("load") == [("models.py", 6, 0)]
    again.close()
    assert SymbolStore.open(path, "/elsewhere") is None
    assert not path.exists()  # deleted: rebuilt, never trusted


def test_an_incomplete_index_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    SymbolStore.create(path, ROOT).close()  # a build that never finished
    assert SymbolStore.open(path, ROOT) is None


@pytest.mark.parametrize("damage", ["garbage", "version", "parser"])
def test_a_corrupt_index_or_one_of_another_version_is_deleted(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "index.sqlite"
    _store(tmp_path).close()
    if damage == "garbage":
        with path.open("r+b") as handle:
            handle.seek(4096)
            handle.write(b"\xff" * 4096)
    else:
        db = sqlite3.connect(path)
        if damage == "version":
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        else:
            db.execute("UPDATE meta SET value = 'tree-sitter=0.0' WHERE key = 'parser'")
        db.commit()
        db.close()
    assert SymbolStore.open(path, ROOT) is None
    assert not path.exists()


def test_a_build_writes_beside_the_index_it_replaces(tmp_path: Path) -> None:
    assert build_path(tmp_path / "a.sqlite") == tmp_path / "a.sqlite.building"


def test_a_file_is_read_through_the_jail_and_one_it_may_not_read_is_recorded_empty(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_bytes(MODELS)
    (root / "blob.bin").write_bytes(b"\x00\x01")
    (root / "link.py").symlink_to(root / "app.py")
    jail = Jail(root, ())
    app = index_file(jail, "app.py", Stamp(0, 0))
    assert app.card is not None and "Card" in app.words and app.stamp.size == len(MODELS)
    for refused in ("blob.bin", "link.py", "gone.py"):
        empty = index_file(jail, refused, Stamp(1, 1))
        assert (empty.card, empty.words, empty.lines, empty.sha256) == (None, frozenset(), (), "")
