"""Compaction: keep a window under its budget without losing what it learned.

High/low watermarks: compaction triggers above `threshold` x budget and then shrinks all the way to
`floor` x budget, so the next several questions run against a stable, cached prefix (compacting
only back to the trigger would re-compact, and bust the cache, every question).

Tiers, in order, each only while the projected size is still above the floor:
  0. observed/preloaded file content (LRU): distilled into the ledger by one batched summarizer
     call, then the bytes are shed (a manifest entry stays). Rate-limited per workspace: within
     the cooldown, or while another fork distills, the bytes are shed without summarizing (they
     are re-derivable from the agents' ongoing reads).
  1. manifest-only file contexts (LRU): evicted; the file on disk is the source of truth.
  2. the oldest Q&A pairs (never the most recent ones): summarized into the ledger. Never
     hard-dropped: if the summarizer fails they stay, and the retry waits for the cooldown.
Then the window re-freezes (the only time its frozen block changes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from live_memory.constants import COMPACTION_KEEP_RECENT_PAIRS, HISTORY_FLOOR
from live_memory.core.errors import ProviderError
from live_memory.core.records import Usage
from live_memory.engine.admission import DistillGate
from live_memory.engine.summarizer import Summarizer
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.file_context import FileContext, file_block
from live_memory.memory.history import Turn, message_text
from live_memory.memory.holding import hold_costs, rechoose_hot_set
from live_memory.memory.hot_set import HotSet
from live_memory.memory.ledger import LedgerFact
from live_memory.outline.directory_tree import TreePolicy
from live_memory.outline.tree_outline import scan_tree

logger = logging.getLogger(__name__)


@dataclass
class CompactionReport:
    before_tokens: int
    after_tokens: int = 0
    overflow: bool = False
    distilled: list[str] = field(default_factory=list)
    shed: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    summarized_pairs: int = 0
    tool_turns_dropped: int = 0
    summaries: int = 0
    summary_failures: int = 0
    team_merged: int = 0  # facts from the team store the ledger took
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class CompactionPolicy:
    """When and how far a window compacts; fixed per settings snapshot."""

    threshold: float  # compact above this share of the window's budget...
    floor: float  # ...down to this share
    keep_recent_pairs: int = COMPACTION_KEEP_RECENT_PAIRS
    history_max_tokens: int = 0  # 0: only the window budget triggers compaction
    history_floor: float = HISTORY_FLOOR
    tree: TreePolicy | None = None  # the tree is re-scanned at each freeze (None: kept as it is)
    hot_set: HotSet | None = None  # the frozen block holds the files the hot-set rule picks at each freeze


@dataclass(frozen=True)
class CompactionScope:
    """The workspace one compaction works for."""

    gate: DistillGate  # one distillation at a time per workspace, and the Q&A retry cooldown
    tree_root: Path
    distill: bool = True  # False near a spend cap or with background calls off: bytes are shed unsummarized
    cache_key: str | None = None  # the workspace's prompt-cache key, for a fold that continues its conversation
    team_facts: tuple[LedgerFact, ...] = ()  # pulled from the team store: they join the ledger at the freeze


class Compactor:
    """Built once per settings snapshot; each call compacts one window and returns what it did (the caller
    counts and charges it)."""

    def __init__(self, policy: CompactionPolicy, summarizer: Summarizer | None) -> None:
        self.policy = policy
        self.summarizer = summarizer

    def needed(self, window: ContextWindow) -> bool:
        over_budget = window.prompt_tokens() > self.policy.threshold * window.budget_tokens
        limit = self.policy.history_max_tokens
        return over_budget or (bool(limit) and history_tokens(window) > limit)

    async def __call__(
        self, window: ContextWindow, overflow_limit: int | None = None, *, scope: CompactionScope
    ) -> CompactionReport | None:
        """Compact if over the threshold, or always after a provider overflow (`overflow_limit`
        set; when the provider named its real limit and it is below our budget, adopt it)."""
        overflow = overflow_limit is not None
        if overflow_limit and overflow_limit < window.budget_tokens:
            window.budget_tokens = overflow_limit
        if not overflow and not self.needed(window):
            return None
        policy = self.policy
        report = CompactionReport(before_tokens=window.prompt_tokens(), overflow=overflow)
        target = int(policy.floor * window.budget_tokens)
        await self._tier0_observations(window, target, scope, report)
        self._tier1_manifest(window, target, report)
        await self._tier2_history(window, target, scope, report)
        if policy.tree is not None:
            scanned = await scan_tree(
                scope.tree_root, policy.tree, budget_tokens=window.budget_tokens, chars_per_token=window.chars_per_token
            )
            window.set_directory_tree(scanned.text, scanned.paths)
        report.team_merged = window.ledger.merge_team(scope.team_facts)
        if policy.hot_set is not None:  # the frozen block holds the files the rule picks now
            costs = hold_costs(window, policy.hot_set.read_share, policy.hot_set.write_share)
            report.shed += rechoose_hot_set(window, policy.hot_set.policy, costs)
        window.freeze()
        window.transcript_room = policy.threshold
        report.after_tokens = window.prompt_tokens()
        logger.info(
            "compacted %d -> %d tokens (distilled %d, shed %d, evicted %d files; summarized %d Q&A pairs)",
            report.before_tokens,
            report.after_tokens,
            len(report.distilled),
            len(report.shed),
            len(report.evicted),
            report.summarized_pairs,
        )
        return report

    # --- tier 0 --------------------------------------------------------------------------------
    async def _tier0_observations(
        self, window: ContextWindow, target: int, scope: CompactionScope, report: CompactionReport
    ) -> None:
        projected = window.projected_tokens()
        held = sorted((f for f in window.files.values() if f.content is not None), key=lambda f: f.last_used)
        batch: list[FileContext] = []
        for f in held:
            if projected <= target:
                break
            batch.append(f)
            projected -= window.tokens(file_block(f)) - window.tokens(f.manifest_line())
        if not batch:
            return
        gate = scope.gate
        if self.summarizer is not None and scope.distill and gate.try_reserve():
            try:
                material = "\n\n".join(file_block(f) for f in batch)
                summary = await self.summarizer.summarize(window.ledger.text_for_summary(), material)
            except ProviderError as exc:
                logger.warning("distilling %d observed files failed (%s); shedding their bytes", len(batch), exc)
                report.summary_failures += 1
            else:
                window.ledger.apply_summary(summary.changes, _manifest(window), self.summarizer.max_tokens)
                report.usage = report.usage + summary.usage
                report.summaries += 1
                report.distilled = [f.path for f in batch]
            finally:
                gate.release()
        for f in batch:
            current = window.files.get(f.path)
            if current is not None:
                window.files[f.path] = replace(current, content=None, preloaded=False)
            if f.path not in report.distilled:
                report.shed.append(f.path)

    # --- tier 1 --------------------------------------------------------------------------------
    def _tier1_manifest(self, window: ContextWindow, target: int, report: CompactionReport) -> None:
        """Re-readable material: manifest entries (LRU), then the tool turns of past questions (oldest
        first; their answers stay). Neither loses knowledge: the files on disk are the source of truth."""
        projected = window.projected_tokens()
        lines_held = {path for path, _, _ in window.cited}  # their entry is what a later change marks
        entries, unlisted = window.manifest()
        # Past its cap the list shows the most recently used; dropping one shows the next: nothing to gain there.
        listed = (
            []
            if unlisted
            else sorted(
                (f for f in entries if f.content is None and f.path not in lines_held), key=lambda f: f.last_used
            )
        )
        for f in listed:
            if projected <= target:
                return
            del window.files[f.path]
            projected -= window.tokens(f.manifest_line())
            report.evicted.append(f.path)
        dropped: set[int] = set()
        for turn in window.history:
            if projected <= target:
                break
            if turn.kind == "tool":
                dropped.add(id(turn))
                projected -= window.tokens(message_text(turn.message))
        if dropped:
            window.history = [t for t in window.history if id(t) not in dropped]
            report.tool_turns_dropped = len(dropped)

    # --- tier 2 --------------------------------------------------------------------------------
    async def _tier2_history(
        self, window: ContextWindow, target: int, scope: CompactionScope, report: CompactionReport
    ) -> None:
        # Shrink to the window's floor, and the Q&A history to its own floor: every request re-reads
        # the history, so a long one makes each later question dearer even when the window has room.
        policy, gate = self.policy, scope.gate
        history_target = policy.history_floor * policy.history_max_tokens
        excess = max(
            window.projected_tokens() - target,
            history_tokens(window) - history_target if policy.history_max_tokens else 0,
        )
        if excess <= 0 or self.summarizer is None or not gate.qa_retry_allowed():
            return
        exchanges = _exchanges(window.history)
        candidates = exchanges[: max(len(exchanges) - policy.keep_recent_pairs, 0)]
        chosen: list[list[Turn]] = []
        for exchange in candidates:
            if excess <= 0:
                break
            chosen.append(exchange)
            excess -= sum(window.tokens(message_text(t.message)) for t in exchange)
        if not chosen:
            return
        material = "\n\n".join(_exchange_text(exchange) for exchange in chosen)
        kept = exchanges[len(chosen)] if len(chosen) < len(exchanges) else None
        cut = next(i for i, t in enumerate(window.history) if t is kept[0]) if kept else len(window.history)
        files_read = list(dict.fromkeys(p for exchange in chosen for p in exchange[-1].cites))  # in order read
        try:
            summary = await self.summarizer.fold_history(window, cut, material, files_read, cache_key=scope.cache_key)
        except ProviderError as exc:
            logger.warning("summarizing %d Q&A pairs failed (%s); keeping them, retry after cooldown", len(chosen), exc)
            gate.qa_failed_at = gate.clock()
            report.summary_failures += 1
            return
        gate.qa_failed_at = None
        window.ledger.apply_summary(summary.changes, _manifest(window), self.summarizer.max_tokens)
        retired = {id(t) for exchange in chosen for t in exchange}
        window.history = [t for t in window.history if id(t) not in retired]
        report.usage = report.usage + summary.usage
        report.summaries += 1
        report.summarized_pairs = len(chosen)
        window.summarized_pairs += len(chosen)


def history_tokens(window: ContextWindow) -> int:
    """The Q&A part of the history (deltas fold into the frozen block at the next freeze)."""
    return window.exchange_tokens()


def _exchanges(history: list[Turn]) -> list[list[Turn]]:
    """Each question with its tool turns and answer, oldest first (deltas between them stay)."""
    exchanges: list[list[Turn]] = []
    current: list[Turn] | None = None
    for turn in history:
        if turn.kind == "question":
            current = [turn]
        elif turn.kind in ("tool", "read") and current is not None:
            current.append(turn)
        elif turn.kind == "answer" and current is not None:
            current.append(turn)
            exchanges.append(current)
            current = None
    return exchanges


def _exchange_text(exchange: list[Turn]) -> str:
    """Summarizer material: the question, the files its tools read, the answer."""
    question, answer = exchange[0], exchange[-1]
    read = sorted({p for p in answer.cites})
    files = f"\nFiles read: {', '.join(read)}" if read else ""
    return f"Q: {question.question or question.message.text}{files}\nA: {answer.message.text}"


def _manifest(window: ContextWindow) -> dict[str, str]:
    return window.grounds()
