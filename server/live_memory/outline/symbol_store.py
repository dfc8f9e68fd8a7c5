"""The symbol index on disk: one SQLite file per checkout, beside its memory's snapshot.

    store = SymbolStore.open(path, root)          # None: absent, unreadable, corrupt or another version
    store.put([index_file(jail, "src/app.py", stamp)])   # a file's card, words and definition lines
    store.definition_lines("render")              # [(path, line, flags)], by path and line
    store.mentioning("render")                    # the paths that mention the word, sorted
    store.record("src/app.py")                    # its stamp and card

What it holds, per file the workspace scan would search (symbol_lines.py): its stamp (size, modification time,
SHA-256), its card (cards.py, when `read_card` would outline it), the lines that look like a definition of each
name, and the words it mentions (an FTS5 table without content: a word's postings, not the text). Tables an
engineer can query with the `sqlite3` shell: `files`, `lines`, `mentions`, `dirs` (the directories' modification
times when the files were listed), `meta`.

Trust: a file of another schema version, of another checkout, or of another parser (the grammar wheels'
versions) is not opened, and `PRAGMA quick_check` must pass: such a file is deleted and rebuilt. A build writes a
new file beside it and renames it into place when complete (`build_path`), so a crash at any moment leaves the
last complete index. Blocking (a worker thread, or the builder's own process); one connection, not shared
between threads at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from live_memory.constants import CARD_PARSE_MAX_BYTES, SYMBOL_INDEX_MAX_FILE_BYTES
from live_memory.fs.jail import Jail
from live_memory.outline.card_syntax import parser_version
from live_memory.outline.cards import FileCard, build_card, language_for, open_text
from live_memory.outline.symbol_lines import definition_lines, mentioned, searchable

__all__ = ["FileRecord", "Stamp", "SymbolStore", "build_path", "index_file", "read_file", "record_of"]

SCHEMA_VERSION = 3  # 3: files_paths, the narrow index a definition lookup reads paths from
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    card TEXT,
    words TEXT NOT NULL,
    doc INTEGER NOT NULL
);
CREATE INDEX files_by_doc ON files(doc);
-- A file's path by its id, apart from its wide row (card, words): a name defined in thousands of files reads
-- their paths from this small index, not from thousands of the table's pages.
CREATE INDEX files_paths ON files(id, path);
CREATE TABLE lines(word TEXT NOT NULL, file INTEGER NOT NULL, line INTEGER NOT NULL, flags INTEGER NOT NULL,
    PRIMARY KEY (word, file, line)) WITHOUT ROWID;
CREATE VIRTUAL TABLE mentions USING fts5(words, content='', detail=none,
    tokenize="unicode61 remove_diacritics 0 tokenchars '_$^'");
CREATE TABLE dirs(path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL) WITHOUT ROWID;
"""


class Stamp(NamedTuple):
    """A file's size and modification time (ns): when they match, its content is taken to be the same."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, found: os.stat_result) -> Stamp:
        return cls(found.st_size, found.st_mtime_ns)


@dataclass(frozen=True)
class FileRecord:
    """What the index keeps of one file (`words` and `lines` are empty for a file it cannot search)."""

    path: str
    stamp: Stamp
    sha256: str
    card: FileCard | None
    words: frozenset[str]
    lines: tuple[tuple[str, int, int], ...]  # (name, line number, flags)


_ONE_WORD = re.compile(r"[\w$]+")
_IN_BATCH = 500  # paths per `IN (...)` query (SQLite allows 32,766 parameters; smaller batches stay quick)
_MARK_UPPER = str.maketrans({c: f"^{c.lower()}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})


def build_path(path: Path) -> Path:
    """Where a build writes before it renames its file into place."""
    return path.with_name(path.name + ".building")


def _encode(word: str) -> str:
    """A word as the case-folding FTS5 tokenizer keeps it apart from its other spellings ("Foo" -> "^foo")."""
    if word.isascii():
        return word.translate(_MARK_UPPER)
    return "".join(f"^{c.lower()}" if c != c.lower() else c for c in word)


def _encoded(words: Iterable[str]) -> str:
    """Words as `mentions` holds them, space-separated (one translation for the ASCII ones)."""
    text = " ".join(words)
    if text.isascii():
        return text.translate(_MARK_UPPER)
    return " ".join(map(_encode, text.split(" ")))


def read_file(jail: Jail, rel: str) -> tuple[Stamp, bytes] | None:
    """A workspace file's stamp and bytes (its first SYMBOL_INDEX_MAX_FILE_BYTES), read through the jail (no link
    followed); None for a file the tools may not read (binary, secret, reached through a link) or that is gone.
    The stamp is taken before the bytes are read: a change meanwhile shows as a new stamp later. Blocking."""
    fd = open_text(jail, rel)
    if fd is None:
        return None
    try:
        stamp = Stamp.of(os.fstat(fd))
        chunks: list[bytes] = []
        size = 0
        while size < SYMBOL_INDEX_MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, SYMBOL_INDEX_MAX_FILE_BYTES - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return stamp, b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def record_of(rel: str, stamp: Stamp, data: bytes | None, sha256: str | None = None) -> FileRecord:
    """The record of a file's bytes (None: a file the tools may not read, recorded with nothing in it)."""
    if data is None:
        return FileRecord(rel, stamp, "", None, frozenset(), ())
    text = searchable(data)
    card = build_card(rel, data) if len(data) <= CARD_PARSE_MAX_BYTES else None
    words = frozenset(mentioned(text)) if text is not None else frozenset()
    markdown = language_for(rel) == "markdown"
    lines = tuple(definition_lines(text, markdown=markdown)) if text is not None else ()
    return FileRecord(rel, stamp, sha256 or hashlib.sha256(data).hexdigest(), card, words, lines)


def index_file(jail: Jail, rel: str, stamp: Stamp) -> FileRecord:
    """The record of one workspace file as it is on disk now (`stamp`: the listing's, for an unreadable one)."""
    found = read_file(jail, rel)
    return record_of(rel, stamp, None) if found is None else record_of(rel, found[0], found[1])


class SymbolStore:
    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    # --- opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, root: str) -> SymbolStore | None:
        """The index at `path` if it can be trusted for `root` (else it is deleted, and None)."""
        if not path.is_file():
            return None
        try:
            db = _connect(path)
        except sqlite3.Error:
            _delete(path)
            return None
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            checked = db.execute("PRAGMA quick_check").fetchone()[0]
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if version == SCHEMA_VERSION else {}
        except sqlite3.Error:
            version, checked, meta = -1, "unreadable", {}
        wanted = {"root": root, "parser": parser_version(), "complete": "1"}
        if version != SCHEMA_VERSION or checked != "ok" or any(meta.get(k) != v for k, v in wanted.items()):
            db.close()
            _delete(path)
            return None
        db.execute("PRAGMA journal_mode=WAL")
        return cls(db, path)

    @classmethod
    def create(cls, path: Path, root: str) -> SymbolStore:
        """A new, empty index at `path` (whatever was there is removed), not yet complete."""
        _delete(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = _connect(path)
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        meta = {"root": root, "parser": parser_version(), "complete": "0", "orphans": "0"}
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        db.commit()
        return cls(db, path)

    def complete(self) -> None:
        """Mark the index whole (every listed file recorded): only a complete index is opened again."""
        with self._db:
            self._db.execute("UPDATE meta SET value = '1' WHERE key = 'complete'")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    # --- reading -------------------------------------------------------------------------------
    def stamps(self) -> dict[str, Stamp]:
        """Every recorded file's stamp."""
        return {p: Stamp(s, m) for p, s, m in self._db.execute("SELECT path, size, mtime_ns FROM files")}

    def stamps_of(self, paths: Iterable[str]) -> dict[str, Stamp]:
        """The stamps of those of `paths` the index records."""
        wanted = list(paths)
        out: dict[str, Stamp] = {}
        for start in range(0, len(wanted), _IN_BATCH):
            batch = wanted[start : start + _IN_BATCH]
            query = f"SELECT path, size, mtime_ns FROM files WHERE path IN ({','.join('?' * len(batch))})"
            out.update((p, Stamp(size, mtime)) for p, size, mtime in self._db.execute(query, batch))
        return out

    def sha256_of(self, path: str) -> str | None:
        """The SHA-256 of a file's recorded bytes ("" for a file recorded with nothing in it; None: not recorded)."""
        row = self._db.execute("SELECT sha256 FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else str(row[0])

    def record(self, path: str) -> tuple[Stamp, str, FileCard | None] | None:
        """A file's stamp, SHA-256 and card (None when the index does not list it)."""
        row = self._db.execute("SELECT size, mtime_ns, sha256, card FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return None
        card = FileCard.from_record(json.loads(row[3])) if row[3] is not None else None
        return Stamp(row[0], row[1]), row[2], card

    def definition_lines(self, word: str) -> list[tuple[str, int, int]]:
        """(path, line, flags) of every line that looks like a definition of `word`, by path and line."""
        query = (
            "SELECT f.path, l.line, l.flags FROM lines l JOIN files f INDEXED BY files_paths ON f.id = l.file"
            " WHERE l.word = ?"
        )
        found: list[tuple[str, int, int]] = self._db.execute(query, (word,)).fetchall()
        found.sort()
        return found

    def mentioning(self, word: str) -> list[str]:
        """The paths that mention `word` as a word, sorted (none for what is not one word)."""
        if not _ONE_WORD.fullmatch(word):
            return []
        phrase = '"' + _encode(word).replace('"', '""') + '"'
        query = "SELECT f.path FROM mentions m JOIN files f ON f.doc = m.rowid WHERE mentions MATCH ?"
        return sorted(path for (path,) in self._db.execute(query, (phrase,)))

    def directories(self) -> dict[str, int]:
        """The directories' modification times recorded when the files were listed ({} when unknown)."""
        return dict(self._db.execute("SELECT path, mtime_ns FROM dirs").fetchall())

    def orphans(self) -> int:
        """Postings of replaced file versions still in `mentions` (a rebuild drops them)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'orphans'").fetchone()
        return int(row[0]) if row else 0

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM files").fetchone()[0])

    # --- writing -------------------------------------------------------------------------------
    def put(self, records: Iterable[FileRecord]) -> None:
        """Record files (replacing what was recorded of them), in one transaction."""
        db = self._db
        replaced = 0
        with db:
            for record in records:
                replaced += self._forget(record.path)
                db.execute("INSERT INTO mentions(words) VALUES (?)", (_encoded(record.words),))
                doc = db.execute("SELECT last_insert_rowid()").fetchone()[0]
                card = json.dumps(record.card.to_record(), separators=(",", ":")) if record.card else None
                defined = json.dumps(sorted({name for name, _, _ in record.lines}), separators=(",", ":"))
                row = (record.path, *record.stamp, record.sha256, card, defined, doc)
                cursor = db.execute(
                    "INSERT INTO files(path, size, mtime_ns, sha256, card, words, doc) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                file = cursor.lastrowid
                db.executemany(
                    "INSERT OR IGNORE INTO lines VALUES (?, ?, ?, ?)", ((n, file, i, f) for n, i, f in record.lines)
                )
            if replaced:
                db.execute("UPDATE meta SET value = value + ? WHERE key = 'orphans'", (replaced,))

    def restamp(self, changes: Sequence[tuple[str, Stamp]]) -> None:
        """New stamps for files whose bytes are unchanged (touched, or copied back)."""
        with self._db:
            self._db.executemany(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", ((*stamp, path) for path, stamp in changes)
            )

    def drop(self, paths: Iterable[str]) -> None:
        """Forget files (gone from the workspace)."""
        with self._db:
            dropped = sum(self._forget(path) for path in paths)
            if dropped:
                self._db.execute("UPDATE meta SET value = value + ? WHERE key = 'orphans'", (dropped,))

    def set_directories(self, directories: dict[str, int]) -> None:
        with self._db:
            self._db.execute("DELETE FROM dirs")
            self._db.executemany("INSERT INTO dirs VALUES (?, ?)", directories.items())

    def _forget(self, path: str) -> int:
        row = self._db.execute("SELECT id, words FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return 0
        file, defined = row
        self._db.executemany("DELETE FROM lines WHERE word = ? AND file = ?", ((w, file) for w in json.loads(defined)))
        self._db.execute("DELETE FROM files WHERE id = ?", (file,))
        return 1

    def paths(self) -> Iterator[str]:
        return (path for (path,) in self._db.execute("SELECT path FROM files"))


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level="DEFERRED")
    db.execute("PRAGMA cache_size = -16000")  # 16 MB of pages at most: memory stays bounded at any size
    db.execute("PRAGMA synchronous = NORMAL")
    return db


def _delete(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
