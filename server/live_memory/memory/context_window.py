"""One workspace's growing conversation ("window B"): what it knows of files, its ledger, its history,
and the frozen block. `prompt_layout.py` turns it into a request; `snapshot.py` stores it.

What it holds, in prompt order:

    stable_prefix    system prompt + directory tree   (stable; survives compaction)
    frozen_volatile  ledger + held file content + manifest (byte-identical between compactions)
    history          Q&A turns + observation deltas    (append-only between compactions)

Invariants this module owns:
- Between compactions `stable_prefix` and `frozen_volatile` never change, and history only grows;
  every change (a teed file, a stale/deleted notice) is queued and appended as a delta by
  `sync_deltas()`. Only `freeze()` (called by compaction and on load) rewrites the block.
- A Q&A turn is stored exactly as it was sent (the question part, without the volatile hint), so
  the next request's prefix extends the previous one byte for byte.
- Raw file bytes (observed/preloaded content) and delta messages are never serialised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from live_memory.constants import (
    CHARS_PER_TOKEN,
    COMPACTION_THRESHOLD,
    HOT_SET_REQUESTS_PER_QUESTION,
    LOOKED_UP_MAX,
    REQUESTS_EMA_ALPHA,
    SEEN_FILES_MIN_CHARS,
    SEEN_FILES_SHARE,
    TRANSCRIPT_KEEP_SHARE,
)
from live_memory.core.messages import Message, TextPart
from live_memory.core.prompts import (
    DIRECTORY_TREE_HEADING,
    OBSERVATION_ACK,
    SYSTEM_PROMPT,
)
from live_memory.core.records import estimate_tokens
from live_memory.memory import frozen_block
from live_memory.memory.cited_lines import CitedLines, HeldLines
from live_memory.memory.file_context import Delta, FileContext, changed_lines, file_block
from live_memory.memory.history import EXCHANGE_KINDS, HistoryTally, Sent, Turn, message_text, tally
from live_memory.memory.hot_set import FileUse, count_uses
from live_memory.memory.ledger import Ledger
from live_memory.outline.workspace_paths import WorkspacePaths


class ContextWindow:
    def __init__(
        self,
        *,
        budget_tokens: int,
        chars_per_token: float = CHARS_PER_TOKEN,
        transcript_keep_share: float = TRANSCRIPT_KEEP_SHARE,
    ) -> None:
        self.budget_tokens = budget_tokens
        self.chars_per_token = chars_per_token
        self.calibration = 1.0  # EMA of actual/estimated prompt tokens
        self.stable_prefix = SYSTEM_PROMPT
        self.frozen_volatile: str | None = None
        self.frozen_ledger: tuple[tuple[str, bool], ...] = ()  # the ledger as the frozen block numbers it
        self.history: list[Turn] = []
        self.files: dict[str, FileContext] = {}
        self.ledger = Ledger()
        self.pending = Delta()
        self.recently_modified: dict[str, None] = {}
        self.version = 0
        self.tick = 0
        self.sent_history_len = 0  # history messages in the last request built (cache lookback anchor)
        self.epoch = 0  # bumped by every freeze: a different epoch means the prefix was rewritten
        self.summarized_pairs = 0  # Q&A pairs folded into the ledger by compaction, ever (persisted)
        self.transcript_room = COMPACTION_THRESHOLD  # share of the budget a kept tool transcript may fill
        self.transcript_keep_share = transcript_keep_share
        self._tally: HistoryTally | None = None  # running figures over `history` (see history.py)
        self.file_uses: dict[str, FileUse] = {}  # reads and tees per file, for the hot set (persisted)
        self.requests_per_question = HOT_SET_REQUESTS_PER_QUESTION  # measured as questions are answered
        self.cited = HeldLines()  # lines answers cited, held (the hot set)
        self.paths = WorkspacePaths()  # the files the tree was listed from (never persisted: listed at load)
        # Files a lookup outlined (find_symbol), path -> SHA-256 of the bytes it outlined: never shown in the
        # prompt, but what is learned from them rests on them (the ledger's grounds).
        self.looked_up: dict[str, str] = {}

    # --- copying (forks) -----------------------------------------------------------------------
    def clone(self) -> ContextWindow:
        """An independent copy for a forked question; values are immutable so copies are shallow."""
        twin = ContextWindow.__new__(ContextWindow)
        twin.__dict__.update(self.__dict__)
        twin.history = list(self.history)
        counted = self._tally
        if counted is not None and counted.covers(self.history, self.chars_per_token):  # same turns: same figures
            twin._tally = replace(counted, history=twin.history)
        twin.files = dict(self.files)
        twin.file_uses = dict(self.file_uses)
        twin.cited = HeldLines(self.cited)
        twin.looked_up = dict(self.looked_up)
        twin.ledger = self.ledger.copy()
        twin.pending = self.pending.copy()
        twin.recently_modified = dict(self.recently_modified)
        return twin

    # --- token accounting ----------------------------------------------------------------------
    def tokens(self, text: str) -> int:
        return round(estimate_tokens(text, self.chars_per_token) * self.calibration)

    def prompt_tokens(self) -> int:
        """What the persistent part of the next prompt really holds (prefix + frozen + history)."""
        frozen = self.frozen_volatile if self.frozen_volatile is not None else self.render_volatile()
        history = round(self._measure_history().all * self.calibration)
        return self.tokens(self.stable_prefix) + self.tokens(frozen) + history

    def exchange_tokens(self) -> int:
        """The Q&A part of the history (deltas fold into the frozen block at the next freeze)."""
        return round(self._measure_history().exchanges * self.calibration)

    def projected_tokens(self) -> int:
        """The size after a re-freeze: what compaction can shrink (deltas fold into file contexts)."""
        return self.tokens(self.stable_prefix) + self.tokens(self.render_volatile()) + self.exchange_tokens()

    def _measure_history(self) -> HistoryTally:
        """The history's figures as a running tally (asked per question and file event: reads new turns only)."""
        self._tally = tally(self.history, self.chars_per_token, self._tally)
        return self._tally

    def fill(self) -> float:
        return self.prompt_tokens() / self.budget_tokens if self.budget_tokens else 0.0

    def calibrate(self, estimated: int, actual: int, alpha: float, low: float, high: float) -> None:
        if estimated <= 0 or actual <= 0:
            return
        ratio = min(max(actual / (estimated / self.calibration), low), high)
        self.calibration = (1 - alpha) * self.calibration + alpha * ratio

    # --- the stable prefix and the frozen block ------------------------------------------------
    def set_directory_tree(self, tree: str, paths: WorkspacePaths | None = None) -> None:
        """Only called on load and at compaction: these bytes sit under breakpoint 1. `paths`: the files the
        tree was listed from (what a question's names of files resolve to)."""
        self.stable_prefix = f"{SYSTEM_PROMPT}\n\n{DIRECTORY_TREE_HEADING}\n{tree.rstrip()}"
        if paths is not None:
            self.paths = paths

    def render_volatile(self) -> str:
        return frozen_block.render(self)

    def manifest_entries(self) -> list[FileContext]:
        """What the manifest lists (see `frozen_block.manifest`)."""
        return frozen_block.manifest(self)[0]

    def manifest(self) -> tuple[list[FileContext], int]:
        """`manifest_entries()`, and how many more its room left out."""
        return frozen_block.manifest(self)

    def seen_room(self) -> int:
        """Characters the files seen may take in the prompt: a share of its head (fixed between compactions)."""
        return max(SEEN_FILES_MIN_CHARS, int(SEEN_FILES_SHARE * len(self.stable_prefix)))

    def ledger_for_fold(self) -> str:
        return frozen_block.ledger_for_fold(self)

    def freeze(self) -> None:
        """Re-snapshot the volatile block; deltas are subsumed by it and dropped from history."""
        self.history = [t for t in self.history if t.kind in EXCHANGE_KINDS]
        self.pending = Delta()
        self.frozen_volatile = self.render_volatile()
        self.frozen_ledger = self.ledger.state()
        self.sent_history_len = 0
        self.epoch += 1

    def append_exchanges(self, turns: Sequence[Turn], files: Mapping[str, FileContext]) -> None:
        """Replay exchanges answered on another copy of this window (a rebase): their turns go after
        what is here, so the history stays append-only; the files they read become known here too. They
        were sent after another history, so nothing cached holds this one up to them."""
        for turn in turns:
            for path in turn.cites:
                read = files.get(path)
                if read is not None and read.state == "current":
                    self.record_read(path, read.sha256, read.size)
        self.history.extend(replace(t, sent=None) if t.sent else t for t in turns)

    def _by_path(self) -> list[FileContext]:
        return [self.files[p] for p in sorted(self.files)]

    # --- file knowledge ------------------------------------------------------------------------
    def _touch(self) -> int:
        self.tick += 1
        return self.tick

    def record_read(self, path: str, sha256: str, size: int) -> None:
        """The model read a file with a tool: keep a manifest entry (lazy re-read later)."""
        self.note_use(path)
        known = self.files.get(path)
        if known is not None and known.sha256 == sha256 and known.state == "current":
            self.files[path] = replace(known, last_used=self._touch())
            return
        self.files[path] = FileContext(path, sha256, size, last_used=self._touch())

    def observe(self, path: str, content: str, sha256: str, *, preloaded: bool = False) -> bool:
        """Hold a file's current bytes (a tee, a preload, or a file the hot set took in after the model read
        it); returns False when nothing changed. A new version of a file already held arrives as what
        changed, when that is shorter than a copy."""
        known = self.files.get(path)
        if known is not None and known.sha256 == sha256 and known.content is not None and known.state == "current":
            keep_preloaded = known.preloaded and preloaded
            self.files[path] = replace(known, last_used=self._touch(), preloaded=keep_preloaded)
            return False
        self.files[path] = FileContext(
            path, sha256, len(content.encode()), content=content, preloaded=preloaded, last_used=self._touch()
        )
        self._drop_cited(path, keep_sha=sha256)
        self.pending.notices.pop(path, None)
        self.pending.seen.pop(path, None)
        self.recently_modified.pop(path, None)
        change = changed_lines(path, known.content, content) if known is not None and known.content else None
        if change is not None and path not in self.pending.content:
            self.pending.diffs[path] = change
        else:
            self.pending.diffs.pop(path, None)
            self.pending.content[path] = None
        return True

    def hold_read(self, path: str, content: str, sha256: str) -> None:
        """Hold the bytes of a file the model read whole this question (the hot set took it): the question's
        tool rounds, which the history keeps (`add_exchange(reads=...)`), show them, so no delta repeats them;
        the next freeze shows them in the frozen block."""
        self.files[path] = FileContext(path, sha256, len(content.encode()), content=content, last_used=self._touch())
        self._drop_cited(path, keep_sha=sha256)
        for queued in (self.pending.content, self.pending.diffs, self.pending.seen, self.pending.notices):
            queued.pop(path, None)

    def note_seen(self, path: str, sha256: str, size: int, *, edited: bool) -> bool:
        """An agent read or edited a file whose bytes are not worth holding: a manifest entry and one short line
        in the next delta (read, then edited before it: still that line); if the memory knew an older version,
        a notice that its earlier answers about the file may be out of date. False when nothing changed."""
        known = self.files.get(path)
        if known is not None and known.sha256 == sha256 and known.state == "current":
            self.files[path] = replace(known, last_used=self._touch())
            return False
        self.files[path] = FileContext(path, sha256, size, last_used=self._touch())
        self._drop_cited(path, keep_sha=sha256)
        self.pending.content.pop(path, None)
        self.pending.diffs.pop(path, None)
        untold = known is None or (path in self.pending.seen and not self.answers_citing({path}))
        if untold and not self.ledger.cites(path):
            self.pending.seen[path] = size
            return True
        self.ledger.mark_stale(path)
        how = "EDITED by an agent" if edited else "CHANGED"
        self.pending.notices[path] = f"- {path}: {how} since you last saw it; re-read it before relying on it."
        return True

    # --- the hot set (hot_set.py) -----------------------------------------------------------------
    def questions_asked(self) -> int:
        """Questions this window has answered, counting those folded into the ledger."""
        return self.summarized_pairs + self.qa_count()

    def note_use(self, path: str) -> None:
        """A read by the memory's model (`record_read`), or a read or edit an agent teed in (ingest)."""
        count_uses(self.file_uses, (path,), self.questions_asked())

    def held_tokens(self) -> int:
        files = sum(self.tokens(file_block(f)) for f in self.files.values() if f.content is not None)
        return files + sum(self.tokens(lines.block()) for lines in self.cited.values())

    def hold_cited(self, lines: CitedLines) -> bool:
        """Hold lines an answer cited (queued as a delta); False when these very lines are held already."""
        return self.cited.hold(lines, self.pending.cited)

    def note_tee(self, path: str, content: str, sha256: str) -> None:
        """An agent read or edited a file and sent its bytes: one use of it, and its held lines follow it."""
        self.note_use(path)
        if self.cited:
            self.relocate_cited(path, content, sha256)

    def relocate_cited(self, path: str, content: str, sha256: str) -> None:
        """The file is now `content` (a tee): held lines it still has, unchanged, are held at their new
        place (an edit above them only moves them); the others are dropped."""
        self.cited.relocate(path, content, sha256, self.pending.cited)

    def _drop_cited(self, path: str, keep_sha: str | None = None) -> None:
        """The file changed: its held lines are no longer current (those of `keep_sha` stay)."""
        self.cited.drop(path, self.pending.cited, keep_sha)

    def note_requests(self, sent: int) -> None:
        """A question was answered with `sent` requests: the running mean a held file is carried by."""
        if sent > 0:
            self.requests_per_question += REQUESTS_EMA_ALPHA * (sent - self.requests_per_question)

    def earned(self, path: str) -> bool:
        """Whether a file has earned holding its bytes: it is held already, an answer cited it, or a
        ledger fact was distilled from it."""
        known = self.files.get(path)
        if known is not None and known.content is not None:
            return True
        return self.ledger.cites(path) or path in self._measure_history().cited

    def knows(self, path: str) -> bool:
        """Whether the memory knows a file: it holds or names it, or a fact rests on it (its change matters)."""
        return path in self.files or any(path in f.sources for f in self.ledger.facts)

    def note_lookup(self, path: str, sha256: str) -> None:
        """A lookup outlined `path` as these bytes (the most recent LOOKED_UP_MAX are kept)."""
        self.looked_up.pop(path, None)
        self.looked_up[path] = sha256
        if len(self.looked_up) > LOOKED_UP_MAX:
            del self.looked_up[next(iter(self.looked_up))]

    def grounds(self) -> dict[str, str]:
        """Every file the window knows as it is on disk, path -> SHA-256: what a new fact may rest on."""
        current = {f.path: f.sha256 for f in self.files.values() if f.state == "current"}
        return {**self.looked_up, **current}

    def invalidate(self, path: str) -> bool:
        """A known file changed on disk: mark it stale (lazy re-read), demote facts, queue a notice."""
        self.looked_up.pop(path, None)
        known = self.files.get(path)
        demoted = self.ledger.mark_stale(path)
        if known is None:
            return demoted > 0
        if known.state == "changed" and known.content is None:
            return True  # already known to be stale (a hook and the watcher both reported one edit)
        self.files[path] = replace(known, state="changed", content=None)
        self._unqueue(path)
        self.pending.notices[path] = f"- {path}: CHANGED since you read it; re-read before relying on it."
        return True

    def mark_deleted(self, path: str) -> bool:
        self.looked_up.pop(path, None)
        known = self.files.get(path)
        demoted = self.ledger.mark_stale(path)
        if known is None:
            return demoted > 0
        self.files[path] = replace(known, state="deleted", content=None)
        self._unqueue(path)
        self.pending.notices[path] = (
            f"- {path}: DELETED or moved/renamed; it no longer exists at this path "
            "(relocate it with Glob/Grep/find_paths, or report it gone)."
        )
        return True

    def _unqueue(self, path: str) -> None:
        """Drop queued content for a file whose bytes are no longer current or held (its cited lines too)."""
        self._drop_cited(path)
        self.pending.content.pop(path, None)
        self.pending.diffs.pop(path, None)
        self.pending.seen.pop(path, None)

    def forget_facts(self, substring: str) -> int:
        """A person retracted facts: drop them now and tell the model through the delta stream
        (the frozen block still shows them until the next compaction)."""
        doomed = [f.text for f in self.ledger.facts if substring.lower() in f.text.lower()]
        removed = self.ledger.forget(substring)
        if removed:
            listed = "; ".join(doomed[:20])
            self.pending.notices[f"ledger-forget:{substring}"] = (
                f"- These ledger facts were retracted by the user and must not be relied on: {listed}"
            )
        return removed

    def shed_content(self, path: str) -> None:
        """Drop held bytes (memory pressure); the file stays known and re-readable."""
        known = self.files.get(path)
        if known is not None and known.content is not None:
            self.files[path] = replace(known, content=None, preloaded=False)
            self._unqueue(path)

    def note_modified(self, path: str) -> None:
        """An agent edited a known file and sent no bytes: hint it on the next question only."""
        if path in self.files:
            self.recently_modified[path] = None

    def drain_recently_modified(self) -> list[str]:
        drained = list(self.recently_modified)
        self.recently_modified.clear()
        return drained

    # --- deltas --------------------------------------------------------------------------------
    def sync_deltas(self) -> int:
        """Append queued changes to history as observation messages; returns messages added."""
        texts = frozen_block.delta_texts(self)
        for text in texts:
            self._append_observation(text)
        self.pending = Delta()
        return len(texts)

    def answers_citing(self, paths: set[str]) -> set[str]:
        """The files among `paths` that answers in the history cite."""
        return {p for t in self.history if t.kind == "answer" for p in t.cites if p in paths}

    def _append_observation(self, text: str) -> None:
        # An assistant acknowledgement keeps strict user/assistant alternation for every endpoint.
        self.history.append(Turn("observation", Message("user", (TextPart(text),))))
        self.history.append(Turn("ack", Message("assistant", (TextPart(OBSERVATION_ACK),))))

    # --- Q&A -----------------------------------------------------------------------------------
    def add_exchange(
        self,
        question_message: Message,
        question: str,
        answer: str,
        cites: Iterable[str],
        transcript: Sequence[Message] = (),
        sent_at: float | None = None,
        reads: Sequence[Message] = (),
    ) -> None:
        """Append the exchange exactly as it was sent (without the hint): the question, the tool turns,
        then the final answer. The next question's prefix then extends the last request byte for byte.
        `sent_at`: the monotonic time the question was first sent (for a fold's cache estimate). `reads`: the
        first tool rounds as sent, kept because they hold files the window took in whole (`hold_read`)."""
        sent = Sent(self.epoch, len(self.history), sent_at) if sent_at is not None else None
        self.history.append(Turn("question", question_message, question=question, sent=sent))
        if reads:
            self.history.extend(Turn("read", m) for m in reads)
            transcript = ()
        transcript_tokens = sum(self.tokens(message_text(m)) for m in transcript)
        # A large transcript, or one that would push the window past its compaction threshold, is not
        # kept: the file contents it holds are re-readable, and a window that grows by whole files per
        # question compacts (and rewrites its cached prefix) far more often.
        small = transcript_tokens <= self.transcript_keep_share * self.budget_tokens
        if small and self.prompt_tokens() + transcript_tokens <= self.transcript_room * self.budget_tokens:
            self.history.extend(Turn("tool", m) for m in transcript)
        self.sent_history_len = len(self.history)  # the last request's cache writes reach this far
        self.history.append(
            Turn("answer", Message("assistant", (TextPart(answer or "(no answer)"),)), cites=tuple(cites))
        )

    def qa_count(self) -> int:
        return self._measure_history().questions

    @property
    def cold(self) -> bool:
        """No held file content and an (almost) empty ledger: answers need grounding first."""
        has_content = any(f.content is not None for f in self.files.values())
        return not has_content and self.ledger.empty and self.qa_count() == 0

    # --- persistence ---------------------------------------------------------------------------
    def paths_to_validate(self) -> set[str]:
        return set(self.files) | {p for f in self.ledger.facts for p in f.sources}

    def revalidate(self, hashes: Mapping[str, str | None]) -> dict[str, int]:
        """After a restart: drop files that vanished, mark changed ones, demote facts whose sources moved."""
        dropped = changed = 0
        for path, known in list(self.files.items()):
            current = hashes.get(path)
            if current is None:
                del self.files[path]
                dropped += 1
            elif current != known.sha256 and known.state == "current":
                self.files[path] = replace(known, state="changed")
                changed += 1
        demoted = self.ledger.revalidate(hashes)
        return {"dropped": dropped, "changed": changed, "demoted": demoted}
