"""The knowledge ledger: provenance-tagged facts distilled by compaction.

Each fact is one line of dense prose plus a sidecar `sources = {path: sha256}` the model never
sees. A fact is attributed to the manifest files it names (full relative path or basename); when
one of those files changes, the fact is demoted under the "possibly out of date" heading instead
of being trusted. A legacy ledger (a plain string, no facts) still renders.

The summarizer answers with changes, not the whole ledger (`apply_summary`): its output is the
dearest token it writes, and a ledger repeated at every compaction would cost more the more the
memory knows.

Teammates' facts (from the team store) are other people's words: they render under a heading of their
own, each after its author, with line breaks and Markdown headings escaped (`quoted`), so no fact can
open a section of the prompt; they take at most TEAM_FACTS_MAX_TOKENS of the ledger, and go before
this memory's own facts when the ledger is over its size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from live_memory.constants import TEAM_FACTS_MAX_TOKENS
from live_memory.core.prompts import EMPTY_LEDGER_TEXT, LEDGER_HEADING, STALE_LEDGER_HEADING, TEAM_LEDGER_HEADING
from live_memory.core.records import estimate_tokens

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_CHANGE = re.compile(r"^\s*(?:(?P<add>\+)\s*(?P<fact>\S.*?)|(?P<op>[-=])\s*#?(?P<number>\d+)\.?)\s*$")
NO_CHANGE = "(no change)"
_PATH_WORD = re.compile(r"[\w./-]+")  # a maximal run of path characters (a trailing period ends a sentence)
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_HEADING_MARK = re.compile(r"(^|\s)(#{1,6})(?=\s|$)")
AUTHOR_SHOWN_MAX = 80


def quoted(text: str, limit: int | None = None) -> str:
    """Someone else's words fit for one line of the prompt: line breaks shown as `\\n`, Markdown heading
    marks escaped, other control characters dropped; cut at `limit` characters when given."""
    text = _LINE_BREAK.sub(" \\\\n ", text)
    text = "".join(c for c in text if c.isprintable() or c == "\t")
    text = _HEADING_MARK.sub(lambda match: match.group(1) + "\\" + match.group(2), text)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class LedgerFact:
    text: str
    sources: Mapping[str, str] = field(default_factory=dict)  # path -> sha256 at distillation time
    stale: bool = False
    team: str = ""  # who on the team learned it ("user@machine"), when it came from the team store
    shared: bool = False  # queued for the team store (never again)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text, "sources": dict(self.sources), "stale": self.stale}
        if self.team:
            data["team"] = self.team
        if self.shared:
            data["shared"] = True
        return data

    @property
    def grounds(self) -> FactKey:
        """The fact and the bytes it rests on: the same key on every machine."""
        return fact_key(self.text, self.sources)


FactKey = tuple[str, frozenset[tuple[str, str]]]


def fact_key(text: str, sources: Mapping[str, str]) -> FactKey:
    return _key(text), frozenset(sources.items())


def split_facts(summary: str) -> list[str]:
    """One fact per non-empty line, bullets and headings stripped, duplicates dropped."""
    facts: list[str] = []
    seen: set[str] = set()
    for line in summary.splitlines():
        text = _BULLET.sub("", line).strip()
        if not text or text.startswith("#"):
            continue
        key = _key(text)
        if key not in seen:
            seen.add(key)
            facts.append(text)
    return facts


def attribute(fact: str, manifest: Mapping[str, str]) -> dict[str, str]:
    """The manifest files a fact names, by full relative path or by basename (models often use it)."""
    by_base: dict[str, list[str]] = {}
    for path in manifest:
        by_base.setdefault(PurePosixPath(path).name, []).append(path)
    sources: dict[str, str] = {}
    for path, digest in manifest.items():
        if path in fact:
            sources[path] = digest
    for base, paths in by_base.items():
        if re.search(rf"(?<![\w/.-]){re.escape(base)}(?![\w-])", fact):
            for path in paths:
                sources.setdefault(path, manifest[path])
    return sources


class Ledger:
    """Facts plus the legacy free-text fallback. Mutated only by compaction and staleness marks.

    `facts` is replaced as a whole (or marked stale in place, which keeps each fact's sources): the
    index of cited paths that file events consult is rebuilt when the list is another one or its
    length changed."""

    def __init__(
        self, facts: Iterable[LedgerFact] = (), legacy_text: str = "", dropped: Iterable[FactKey] = ()
    ) -> None:
        self.facts: list[LedgerFact] = list(facts)
        self.legacy_text = legacy_text
        # Facts the summarizer dropped (`- n`), with the bytes they rested on: never taken back from the team.
        self.dropped: set[FactKey] = set(dropped)
        self._cited: tuple[list[LedgerFact], int, frozenset[str]] | None = None

    def copy(self) -> Ledger:
        return Ledger(self.facts, self.legacy_text, self.dropped)

    @property
    def empty(self) -> bool:
        return not self.facts and not self.legacy_text.strip()

    def text_for_summary(self) -> str:
        """What the summarizer changes: every fact numbered (its changes name them by number), stale ones
        flagged so it can re-check them, teammates' marked and quoted as in the prompt."""
        if not self.facts:
            return self.legacy_text.strip()
        return "\n".join(
            f"{n}. {'(possibly stale) ' if f.stale else ''}{_shown(f)}" for n, f in enumerate(self.facts, 1)
        )

    def state(self) -> tuple[tuple[str, bool], ...]:
        """Each fact's text and staleness, in order: what `render` numbers."""
        return tuple((f.text, f.stale) for f in self.facts)

    def set_from_summary(self, summary: str, manifest: Mapping[str, str]) -> None:
        """Adopt a whole ledger: split into facts, attribute each; flags reset."""
        self.facts = [LedgerFact(text, attribute(text, manifest)) for text in split_facts(summary)]
        self.legacy_text = ""

    def apply_summary(self, answer: str, manifest: Mapping[str, str], max_tokens: int) -> None:
        """Adopt the summarizer's answer: its changes to the facts numbered in `text_for_summary` (`+ fact`
        adds one, `- n` drops fact n, `= n` confirms possibly-stale fact n); the facts it does not name
        stay as they are, sources and marks included. An answer without a change line is a whole ledger
        (a model that ignored the format), whose facts replace these. Past `max_tokens`, the oldest facts
        go, possibly stale ones first."""
        changes = [(line, _CHANGE.match(line)) for line in answer.splitlines() if line.strip()]
        if not any(match for _, match in changes):
            if split_facts(answer) and answer.strip() != NO_CHANGE:
                self.set_from_summary(answer, manifest)
            self._cap(max_tokens)
            return
        if not self.facts and self.legacy_text.strip():  # its text becomes facts the changes add to
            self.set_from_summary(self.legacy_text, manifest)
        facts: list[LedgerFact | None] = list(self.facts)
        known = {_key(f.text): index for index, f in enumerate(self.facts)}
        for line, match in changes:
            added = match.group("fact") if match else (split_facts(line) or [""])[0]  # a bullet: an addition
            if match and match.group("op"):
                index = int(match.group("number")) - 1
                if 0 <= index < len(self.facts) and facts[index] is not None:
                    if match.group("op") == "=":
                        facts[index] = _confirmed(self.facts[index], manifest)
                    else:
                        self.dropped.add(self.facts[index].grounds)
                        facts[index] = None
            elif added and _key(added) in known:  # already there: at most a confirmation
                index = known[_key(added)]
                fact = facts[index]
                if fact is not None and fact.stale:
                    facts[index] = _confirmed(fact, manifest)
            elif added and added != NO_CHANGE:
                known[_key(added)] = len(facts)
                facts.append(LedgerFact(added, attribute(added, manifest)))
        self.facts = [f for f in facts if f is not None]
        self.legacy_text = ""
        self._cap(max_tokens)

    def _cap(self, max_tokens: int) -> None:
        size = sum(estimate_tokens(f.text) + 1 for f in self.facts)
        if size <= max_tokens:
            return
        # Possibly stale facts go first, then teammates', then this memory's own; the oldest first in each.
        order = sorted(range(len(self.facts)), key=lambda i: (not self.facts[i].stale, not self.facts[i].team))
        dropped: set[int] = set()
        for index in order:
            if size <= max_tokens:
                break
            dropped.add(index)
            size -= estimate_tokens(self.facts[index].text) + 1
        self.facts = [f for i, f in enumerate(self.facts) if i not in dropped]

    def merge_team(self, facts: Iterable[LedgerFact], max_tokens: int = TEAM_FACTS_MAX_TOKENS) -> int:
        """Add the team's facts this ledger has neither (the same text on the same bytes) nor dropped, in
        the order given (newest confirmation first), while the team's facts take at most `max_tokens`;
        returns how many were added. Takes effect in the prompt at the next freeze, like every ledger change."""
        known = {f.grounds for f in self.facts} | self.dropped
        room = max_tokens - sum(estimate_tokens(f.text) + 1 for f in self.facts if f.team)
        added: list[LedgerFact] = []
        for fact in facts:
            size = estimate_tokens(fact.text) + 1
            if fact.grounds not in known and size <= room:
                known.add(fact.grounds)
                added.append(fact)
                room -= size
        self.facts = [*self.facts, *added]
        return len(added)

    def unshared(self) -> list[LedgerFact]:
        """The facts learned here that were never queued for the team store (stale ones wait until confirmed)."""
        return [f for f in self.facts if not f.shared and not f.team and not f.stale]

    def mark_shared(self, facts: Iterable[LedgerFact]) -> None:
        """Remember that these facts were queued for the team store (the prompt does not change)."""
        keys = {f.grounds for f in facts}
        self.facts = [replace(f, shared=True) if f.grounds in keys else f for f in self.facts]

    def cited_paths(self) -> frozenset[str]:
        """Every path a fact was distilled from. Asked for each file event: indexed, not scanned."""
        facts, cited = self.facts, self._cited
        if cited is None or cited[0] is not facts or cited[1] != len(facts):
            cited = self._cited = (facts, len(facts), frozenset(p for f in facts for p in f.sources))
        return cited[2]

    def named_paths(self) -> frozenset[str]:
        """Every path-like word that facts the model is told to trust spell out (stale facts do not count)."""
        words = (w.rstrip(".") for f in self.facts if not f.stale for w in _PATH_WORD.findall(f.text))
        return frozenset(words)

    def cites(self, path: str) -> bool:
        """Whether a fact was distilled from `path`."""
        return path in self.cited_paths()

    def mark_stale(self, path: str) -> int:
        """Demote every fact citing `path`; returns how many were newly demoted."""
        if path not in self.cited_paths():
            return 0
        demoted = 0
        for index, fact in enumerate(self.facts):
            if path in fact.sources and not fact.stale:
                self.facts[index] = replace(fact, stale=True)
                demoted += 1
        return demoted

    def revalidate(self, current_hashes: Mapping[str, str | None]) -> int:
        """Demote facts whose source files changed or vanished (used when a snapshot loads)."""
        demoted = 0
        for path, digest in list(_all_sources(self.facts)):
            if current_hashes.get(path) != digest:
                demoted += self.mark_stale(path)
        return demoted

    def forget(self, substring: str) -> int:
        before = len(self.facts)
        needle = substring.lower()
        self.facts = [f for f in self.facts if needle not in f.text.lower()]
        return before - len(self.facts)

    def to_markdown(self) -> str:
        """For humans (`live-memory ledger export`): facts with their sources and freshness."""
        if not self.facts:
            return "# Live Memory ledger\n\n" + (self.legacy_text.strip() or "(empty)") + "\n"
        lines = ["# Live Memory ledger", ""]
        for fact in self.facts:
            sources = ", ".join(f"`{p}`" for p in sorted(fact.sources)) or "no file"
            flag = " **(possibly out of date)**" if fact.stale else ""
            lines.append(f"- {fact.text}{flag}  \n  _sources: {sources}_")
        return "\n".join(lines) + "\n"

    def render(self) -> str:
        if self.empty:
            return f"{LEDGER_HEADING}\n{EMPTY_LEDGER_TEXT}"
        if not self.facts:
            return f"{LEDGER_HEADING}\n{self.legacy_text.strip()}"
        # Numbered as in `text_for_summary`, so a fold can name facts without sending the ledger again.
        numbered = list(enumerate(self.facts, 1))
        fresh = [f"{n}. {f.text}" for n, f in numbered if not f.stale and not f.team]
        team = [f"{n}. {_shown(f)}" for n, f in numbered if not f.stale and f.team]
        stale = [f"{n}. {_shown(f)}" for n, f in numbered if f.stale]
        parts = [LEDGER_HEADING, "\n".join(fresh) if fresh else EMPTY_LEDGER_TEXT]
        if team:
            parts += ["", TEAM_LEDGER_HEADING, "\n".join(team)]
        if stale:
            parts += ["", STALE_LEDGER_HEADING, "\n".join(stale)]
        return "\n".join(parts)


def _shown(fact: LedgerFact) -> str:
    """A fact as the prompt shows it: a teammate's after its author, quoted (their words, never a heading)."""
    return f"[{quoted(fact.team, AUTHOR_SHOWN_MAX)}] {quoted(fact.text)}" if fact.team else fact.text


def _confirmed(fact: LedgerFact, manifest: Mapping[str, str]) -> LedgerFact:
    """The fact trusted again, attributed to the files as they are now (new grounds: shared again)."""
    return LedgerFact(fact.text, attribute(fact.text, manifest), team=fact.team)


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _all_sources(facts: Iterable[LedgerFact]) -> set[tuple[str, str]]:
    return {(path, digest) for fact in facts for path, digest in fact.sources.items()}
