"""The symbol index: file cards by path, and where each name is defined and used.

    index = SymbolIndex()
    index.add(build_card(path, text))          # adds, or replaces the path's previous card
    index.lookup("FileCard.render")            # -> [SymbolHit(path, qualified, kind, start, end, ...)]
    index.uses("render")                       # -> paths whose card references the name
    SymbolIndex.from_records(index.to_records())   # plain JSON-able dicts, for snapshots

A definition answers to its bare name, its qualified name and every dotted tail of it ("render",
"FileCard.render", "cards.FileCard.render" alike); an exact match is preferred, else one that differs
only in case, else the Markdown sections whose heading has the name as a word ("Configuration" finds
"## Configuration reference": where a name no code defines is written about). Lookups are dictionary
reads. Not thread-safe: change and read it from one thread (the event loop), or guard it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from live_memory.outline.cards import HEADING_SEPARATOR, Definition, FileCard

__all__ = ["SymbolHit", "SymbolIndex"]


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """One definition of a looked-up name."""

    path: str
    qualified: str
    name: str
    kind: str
    start: int
    end: int
    signature: str


def _keys(definition: Definition) -> set[str]:
    """The names a definition answers to: its name, its qualified name and each tail of the latter."""
    separator = HEADING_SEPARATOR if definition.kind == "heading" else "."
    parts = definition.qualified.split(separator)
    keys = {separator.join(parts[i:]) for i in range(len(parts))}
    keys.add(definition.name)
    return keys


# The words a heading is found by: identifier-like, long enough not to be a common short word.
_HEADING_WORD = re.compile(r"[A-Za-z_][\w$]{3,}")


def _heading_words(definition: Definition) -> set[str]:
    """The casefolded words of a heading's own title (a section is found by what it is titled)."""
    if definition.kind != "heading":
        return set()
    return {word.casefold() for word in _HEADING_WORD.findall(definition.name)}


def _bare(name: str) -> str:
    """The identifier a reference to `name` is spelled with: "render" for "FileCard.render"."""
    return name.rsplit(".", 1)[-1] if "." in name and " " not in name else name


class SymbolIndex:
    def __init__(self, cards: Iterable[FileCard] = ()) -> None:
        self._cards: dict[str, FileCard] = {}
        self._defined: dict[str, list[SymbolHit]] = {}
        self._folded: dict[str, set[str]] = {}  # casefolded key -> the keys spelled that way
        self._used: dict[str, set[str]] = {}  # identifier -> paths referencing it
        self._titled: dict[str, list[SymbolHit]] = {}  # casefolded heading word -> the sections it titles
        for card in cards:
            self.add(card)

    def __len__(self) -> int:
        return len(self._cards)

    def __contains__(self, path: object) -> bool:
        return path in self._cards

    def __iter__(self) -> Iterator[FileCard]:
        return iter([self._cards[p] for p in sorted(self._cards)])

    def card(self, path: str) -> FileCard | None:
        return self._cards.get(path)

    def add(self, card: FileCard) -> None:
        """Index `card`, replacing the card its path had."""
        self.remove(card.path)
        self._cards[card.path] = card
        for definition in card.definitions:
            hit = SymbolHit(
                card.path,
                definition.qualified,
                definition.name,
                definition.kind,
                definition.start,
                definition.end,
                definition.signature,
            )
            for key in _keys(definition):
                self._defined.setdefault(key, []).append(hit)
                self._folded.setdefault(key.casefold(), set()).add(key)
            for word in _heading_words(definition):
                self._titled.setdefault(word, []).append(hit)
        for name in card.references:
            self._used.setdefault(name, set()).add(card.path)

    def remove(self, path: str) -> None:
        """Forget `path`'s card (nothing happens when it has none)."""
        card = self._cards.pop(path, None)
        if card is None:
            return
        for definition in card.definitions:
            for key in _keys(definition):
                hits = [h for h in self._defined.get(key, ()) if h.path != path]
                if hits:
                    self._defined[key] = hits
                    continue
                self._defined.pop(key, None)
                spellings = self._folded.get(key.casefold())
                if spellings is not None:
                    spellings.discard(key)
                    if not spellings:
                        del self._folded[key.casefold()]
            for word in _heading_words(definition):
                sections = [h for h in self._titled.get(word, ()) if h.path != path]
                if sections:
                    self._titled[word] = sections
                else:
                    self._titled.pop(word, None)
        for name in card.references:
            users = self._used.get(name)
            if users is not None:
                users.discard(path)
                if not users:
                    del self._used[name]

    def lookup(self, name: str) -> list[SymbolHit]:
        """Where `name` (bare, qualified or a qualified tail) is defined, sorted by path and line; when
        nothing matches exactly, the definitions whose name differs only in case; when none does either,
        the Markdown sections whose heading has the name as a word."""
        name = name.strip()
        hits = self._defined.get(name)
        if hits is None:
            found: dict[SymbolHit, None] = {}
            for key in sorted(self._folded.get(name.casefold(), ())):
                found.update(dict.fromkeys(self._defined.get(key, ())))
            hits = list(found) or self._titled.get(name.casefold(), [])
        return sorted(set(hits), key=lambda h: (h.path, h.start, h.qualified))

    def uses(self, name: str) -> list[str]:
        """The paths whose card references `name` (a qualified name by its last part), sorted. A file
        that only defines the name is not among them."""
        return sorted(self._used.get(_bare(name.strip()), ()))

    def knows(self, name: str) -> bool:
        """Whether the index has a definition or a use of `name`."""
        return bool(self.lookup(name) or self.uses(name))

    def to_records(self) -> list[dict[str, Any]]:
        """One plain dict per card (sorted by path); `from_records` reads them back."""
        return [self._cards[path].to_record() for path in sorted(self._cards)]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> SymbolIndex:
        """An index of the cards `to_records` wrote. Raises ValueError for a malformed record."""
        return cls(FileCard.from_record(record) for record in records)
