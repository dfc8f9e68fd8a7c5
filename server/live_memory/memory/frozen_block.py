"""The frozen block as the prompt shows it: the ledger, the held files, the cited lines and the list of files seen
(rendered from a window at each freeze; `ContextWindow` keeps the bytes), the ledger as a fold names it, and what
changed since the freeze as the observation deltas the history gets (`delta_texts`).

Must never: depend on anything but the window's state (the same state gives the same bytes: they are cached).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from live_memory.core.prompts import (
    CITED_HEADING,
    CITED_NOTE,
    FROZEN_LEDGER_POINTER,
    LEDGER_RENUMBERED,
    MANIFEST_HEADING,
    NEWLY_STALE_FACTS,
    OBSERVED_HEADING,
    PRELOADED_HEADING,
    SEEN_FILES_MORE,
    SEEN_FILES_MORE_INLINE,
)
from live_memory.memory.cited_lines import render as render_cited
from live_memory.memory.file_context import FileContext, file_block, most_recently_used, named

if TYPE_CHECKING:
    from live_memory.memory.context_window import ContextWindow


def render(window: ContextWindow) -> str:
    """The volatile block: ledger, preloaded and observed files, cited lines, the files seen."""
    files = [window.files[p] for p in sorted(window.files)]
    parts = [window.ledger.render()]
    preloaded = [f for f in files if f.content is not None and f.preloaded]
    observed = [f for f in files if f.content is not None and not f.preloaded]
    if preloaded:
        parts.append(PRELOADED_HEADING + "\n" + "\n\n".join(file_block(f) for f in preloaded))
    if observed:
        parts.append(OBSERVED_HEADING + "\n" + "\n\n".join(file_block(f) for f in observed))
    if window.cited:
        parts.append(CITED_HEADING + "\n" + render_cited(window.cited))
    listed, unlisted = manifest(window)
    if listed:
        lines = [f.manifest_line() for f in listed] + ([SEEN_FILES_MORE.format(unlisted)] if unlisted else [])
        parts.append(MANIFEST_HEADING + "\n" + "\n".join(lines))
    return "\n\n".join(parts)


def manifest(window: ContextWindow) -> tuple[list[FileContext], int]:
    """What the list of files seen shows, by path: changed and deleted files, and files known by name only that no
    trusted fact spells out (such a fact makes the file known already: listing it again would pay twice); the
    most recently used, within the window's `seen_room` (the others stay known, findable through the tree and the
    index, and are re-validated: only the prompt does not carry them); and how many it left out."""
    spelled_out = window.ledger.named_paths()
    entries = [
        window.files[p]
        for p in sorted(window.files)
        if window.files[p].state != "current" or (window.files[p].content is None and p not in spelled_out)
    ]
    listed = most_recently_used(entries, window.seen_room(), lambda f: len(f.manifest_line()) + 1)
    return listed, len(entries) - len(listed)


def ledger_for_fold(window: ContextWindow) -> str:
    """The ledger as a fold (which sees the frozen block) names it: when the frozen block numbers these facts
    (perhaps with some marked stale since), a pointer to them and the newly stale numbers instead of a second
    copy; when it numbers other facts, the ledger with a warning that its numbers are the ones."""
    ledger = window.ledger
    now, frozen = ledger.state(), window.frozen_ledger
    if window.frozen_volatile is None or not now or not frozen:
        return ledger.text_for_summary()
    same_facts = [t for t, _ in now] == [t for t, _ in frozen]
    if not same_facts or any(was and not stale for (_, stale), (_, was) in zip(now, frozen, strict=True)):
        return f"{LEDGER_RENUMBERED}\n{ledger.text_for_summary()}"
    newly = [str(n) for n, ((_, stale), (_, was)) in enumerate(zip(now, frozen, strict=True), 1) if stale > was]
    return FROZEN_LEDGER_POINTER + (f"\n{NEWLY_STALE_FACTS} {', '.join(newly)}" if newly else "")


def delta_texts(window: ContextWindow) -> list[str]:
    """The observations the window's queued changes make, in order: new content and diffs of held files, newly
    held lines, the files the agents read or edited (within the room of the files seen), staleness notices."""
    pending = window.pending
    texts: list[str] = []
    for path in pending.content:
        held = window.files.get(path)
        if held is not None and held.content is not None:
            texts.append(f"[observation] Current content of {path}:\n\n{file_block(held)}")
    for path, change in pending.diffs.items():
        held = window.files.get(path)
        if held is not None and held.content is not None:
            texts.append(f"[observation] {path} was edited; what changed (unified diff):\n\n{change}")
    new_lines = {key: window.cited[key] for key in pending.cited if key in window.cited}
    if new_lines:
        texts.append(f"[observation] {CITED_NOTE}\n\n{render_cited(new_lines)}")
    if pending.seen:
        seen = [window.files[p] for p in pending.seen if p in window.files]
        room = window.seen_room()
        recent = {f.path for f in most_recently_used(seen, room, lambda f: len(named(f.path, f.size)) + 2)}
        listed = ", ".join(named(p, size) for p, size in pending.seen.items() if p in recent)
        more = len(pending.seen) - len(recent)
        listed += SEEN_FILES_MORE_INLINE.format(more) if more > 0 else ""
        texts.append(f"[observation] The agents read or edited (not shown here): {listed}")
    if pending.notices:
        lines = list(pending.notices.values())
        cited = window.answers_citing(set(pending.notices))
        if cited:
            lines.append(
                "Earlier answers in this conversation relied on these files and may now be out of date: "
                + ", ".join(sorted(cited))
                + "."
            )
        texts.append("[observation] File changes since you last looked:\n" + "\n".join(lines))
    return texts
