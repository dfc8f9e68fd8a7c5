"""The snapshot schema: what a workspace's memory looks like on disk, and the conversion both ways.

Pydantic at this edge: a snapshot that does not fit the schema is refused as a whole (the store then
quarantines it) instead of half-loading. Raw file bytes, tool turns and observation deltas are never
part of a snapshot: files are re-read from disk, deltas are re-derived.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from live_memory.core.messages import Message, Part, TextPart, ToolResultPart, ToolUsePart
from live_memory.core.records import Usage
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.file_context import FileContext
from live_memory.memory.history import Turn
from live_memory.memory.hot_set import FileUse
from live_memory.memory.ledger import Ledger, LedgerFact, fact_key
from live_memory.workspaces.workspace import WorkspaceState, WorkspaceStats

SCHEMA_VERSION = 1
PERSISTED_KINDS = ("question", "answer")  # tool turns hold file contents: never persisted
COMPACT = (",", ":")
HISTORY_FROM = "history_from"  # a journal delta's first new turn (see `encode_document`)
# A journal delta's schema: one a server that cannot complete deltas refuses, so it loads the journal's last
# whole record instead of taking a delta's few turns for the whole history.
DELTA_SCHEMA_VERSION = SCHEMA_VERSION + 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextPartIn(_Model):
    type: Literal["text"]
    text: str


class ToolUseIn(_Model):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultIn(_Model):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: bool = False


class MessageIn(_Model):
    role: Literal["user", "assistant"]
    parts: list[TextPartIn | ToolUseIn | ToolResultIn]


class TurnIn(_Model):
    kind: Literal["question", "answer"]
    message: MessageIn
    question: str = ""
    cites: list[str] = Field(default_factory=list)


class FileIn(_Model):
    path: str
    sha256: str
    size: int = 0
    state: Literal["current", "changed", "deleted"] = "current"
    last_used: int = 0
    held: bool = False  # its bytes were held: held again after a restart if the file is unchanged
    uses: int = 0  # the hot set's counts (hot_set.FileUse), in questions asked of the workspace
    first_use: int = 0
    last_use: int = 0


class FactIn(_Model):
    text: str
    sources: dict[str, str] = Field(default_factory=dict)
    stale: bool = False
    team: str = ""
    shared: bool = False


class DroppedIn(_Model):
    text: str  # the fact's normalized text (ledger.fact_key)
    sources: dict[str, str] = Field(default_factory=dict)


class LedgerIn(_Model):
    facts: list[FactIn] = Field(default_factory=list)
    legacy_text: str = ""
    dropped: list[DroppedIn] = Field(default_factory=list)


class WindowIn(_Model):
    calibration: float = 1.0
    version: int = 0
    summarized_pairs: int = 0
    ledger: LedgerIn | str | None = None  # legacy snapshots stored the ledger as one string
    files: list[FileIn] = Field(default_factory=list)
    history: list[TurnIn] = Field(default_factory=list)


class UsageIn(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0


class StatsIn(_Model):
    questions: int = 0
    usage: UsageIn = Field(default_factory=UsageIn)
    cost_usd: float = 0.0
    last_question_at: float | None = None
    compactions: int = 0
    summaries_written: int = 0
    last_compaction_at: float | None = None
    background_usage: UsageIn = Field(default_factory=UsageIn)
    background_cost_usd: float = 0.0
    tokens_saved: int = 0
    rebased_commits: int = 0
    agents: dict[str, int] = Field(default_factory=dict)  # absent in snapshots written before it was kept


class SnapshotIn(_Model):
    schema_: int = Field(alias="schema")
    saved_at: float = 0.0
    workspace: str = ""
    window: WindowIn
    stats: StatsIn = Field(default_factory=StatsIn)


@dataclass(frozen=True)
class SnapshotMeta:
    """What /stats and the status page show of a workspace that is on disk but not in memory."""

    workspace_id: str
    workspace: str
    questions_answered: int
    qa_retained: int
    qa_summarized: int
    ledger_facts: int
    cost_usd: float
    saved_at: float = 0.0
    agents: dict[str, int] = field(default_factory=dict)  # questions answered, by asking agent

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SnapshotMetaIn(_Model):
    workspace_id: str
    workspace: str
    questions_answered: int = 0
    qa_retained: int = 0
    qa_summarized: int = 0
    ledger_facts: int = 0
    cost_usd: float = 0.0
    saved_at: float = 0.0
    agents: dict[str, int] = Field(default_factory=dict)


def snapshot_meta(state: WorkspaceState) -> SnapshotMeta:
    window, stats = state.window, state.stats
    return SnapshotMeta(
        workspace_id=state.id,
        workspace=str(state.root),
        questions_answered=stats.questions,
        qa_retained=window.qa_count(),
        qa_summarized=window.summarized_pairs,
        ledger_facts=len(window.ledger.facts),
        cost_usd=round(stats.cost_usd + stats.background_cost_usd, 6),
        agents=dict(stats.agents),
    )


def parse_meta(raw: Any) -> SnapshotMeta:
    """Raises ValueError when `raw` is not a snapshot's metadata."""
    return SnapshotMeta(**SnapshotMetaIn.model_validate(raw).model_dump())


# --- writing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EncodedHistory:
    """A window's persisted turns, each already encoded as compact JSON (see `encode_document`)."""

    items: tuple[str, ...]


class HistoryEncoder:
    """Each persisted turn's JSON, encoded once. Between compactions a workspace's history only
    grows, and its turns are the same objects in every copy of its window, so a snapshot encodes
    only the turns added since the previous one and reuses the rest as they are (a history that no
    longer starts with the turns seen last, after a compaction, is encoded afresh). One per workspace."""

    def __init__(self) -> None:
        self._turns: tuple[Turn, ...] = ()  # the history seen last (held, so identities stay unique)
        self._items: tuple[str, ...] = ()  # the JSON of its persisted turns

    def encode(self, history: Sequence[Turn]) -> EncodedHistory:
        seen = len(self._turns)
        if seen > len(history) or tuple(history[:seen]) != self._turns:
            seen, self._items = 0, ()
        added = tuple(json.dumps(turn_json(t), separators=COMPACT) for t in history[seen:] if t.kind in PERSISTED_KINDS)
        self._turns = tuple(history)
        self._items += added
        return EncodedHistory(self._items)


def encoded_history(document: Mapping[str, Any]) -> EncodedHistory | None:
    """The already encoded turns of a document's window, if it carries them so."""
    window = document.get("window")
    history = window.get("history") if isinstance(window, Mapping) else None
    return history if isinstance(history, EncodedHistory) else None


def encode_document(document: Mapping[str, Any], history_from: int = 0) -> str:
    """Compact JSON of a snapshot document; an `EncodedHistory` in its window is spliced in verbatim
    (byte for byte what encoding the turns afresh would give). `history_from` > 0 writes a journal
    delta: only the turns from that index, and the index as the window's HISTORY_FROM (the turns
    before it are those of the journal's previous record; see `apply_history_delta`)."""
    history = encoded_history(document)
    if history is None:
        return json.dumps(document, separators=COMPACT)
    window = document["window"]
    marker = f"\x00history-{secrets.token_hex(8)}\x00"  # cannot occur in the document otherwise
    delta = {"schema": DELTA_SCHEMA_VERSION} if history_from else {}
    fields = {**window, "history": marker, **({HISTORY_FROM: history_from} if history_from else {})}
    text = json.dumps({**document, **delta, "window": fields}, separators=COMPACT)
    return text.replace(json.dumps(marker), "[" + ",".join(history.items[history_from:]) + "]", 1)


def apply_history_delta(document: dict[str, Any], history: list[Any] | None) -> dict[str, Any] | None:
    """A journal record as a whole document: a delta's turns appended to `history` (the turns of the
    journal's previous record, None when unknown) from its HISTORY_FROM index. None when the delta
    cannot apply (its base was lost)."""
    window = document.get("window")
    if not isinstance(window, dict) or HISTORY_FROM not in window:
        return document if document.get("schema", SCHEMA_VERSION) <= SCHEMA_VERSION else None
    since, tail = window[HISTORY_FROM], window.get("history")
    if history is None or not isinstance(since, int) or not 0 < since <= len(history) or not isinstance(tail, list):
        return None
    whole = {key: value for key, value in window.items() if key != HISTORY_FROM}
    return {**document, "schema": SCHEMA_VERSION, "window": {**whole, "history": history[:since] + tail}}


def snapshot_payload(
    root: str, window: ContextWindow, stats: WorkspaceStats, history: HistoryEncoder | None = None
) -> dict[str, Any]:
    """The JSON-ready payload of one workspace (the store adds the schema version and time). With a
    `history` encoder the turns arrive already encoded (write it with `encode_document`)."""
    return {"workspace": root, "window": window_json(window, history), "stats": stats.to_json()}


def window_json(window: ContextWindow, history: HistoryEncoder | None = None) -> dict[str, Any]:
    turns: EncodedHistory | list[dict[str, Any]] = (
        history.encode(window.history)
        if history is not None
        else [turn_json(t) for t in window.history if t.kind in PERSISTED_KINDS]
    )
    return {
        "calibration": window.calibration,
        "version": window.version,
        "summarized_pairs": window.summarized_pairs,
        "ledger": {
            "facts": [f.to_json() for f in window.ledger.facts],
            "legacy_text": window.ledger.legacy_text,
            "dropped": [{"text": text, "sources": dict(sources)} for text, sources in sorted(window.ledger.dropped)],
        },
        "files": [
            {
                "path": f.path,
                "sha256": f.sha256,
                "size": f.size,
                "state": f.state,
                "last_used": f.last_used,
                "held": f.content is not None,
                **_use_json(window.file_uses.get(f.path)),
            }
            for f in window.files.values()
        ],
        "history": turns,
    }


def _use_json(use: FileUse | None) -> dict[str, int]:
    return {} if use is None else {"uses": use.uses, "first_use": use.first, "last_use": use.last}


def turn_json(turn: Turn) -> dict[str, Any]:
    return {
        "kind": turn.kind,
        "message": message_json(turn.message),
        "question": turn.question,
        "cites": list(turn.cites),
    }


def message_json(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolUsePart):
            parts.append({"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.input)})
        else:
            parts.append(
                {
                    "type": "tool_result",
                    "tool_use_id": part.tool_use_id,
                    "content": part.content,
                    "is_error": part.is_error,
                }
            )
    return {"role": message.role, "parts": parts}


# --- reading -------------------------------------------------------------------------------------
def parse_snapshot(payload: dict[str, Any]) -> SnapshotIn:
    """Validate a stored payload; raises ValueError (pydantic's ValidationError is one) when it does not fit."""
    return SnapshotIn.model_validate(payload)


def restore_window(window: ContextWindow, data: WindowIn) -> list[str]:
    """Fill `window` from a validated snapshot; its frozen block is rebuilt at the next freeze.
    Returns the paths whose bytes were held (the snapshot never holds the bytes themselves)."""
    window.calibration = data.calibration
    window.version = data.version
    window.summarized_pairs = data.summarized_pairs
    window.ledger = _ledger(data.ledger)
    window.files = {
        f.path: FileContext(f.path, f.sha256, f.size, state=f.state, last_used=f.last_used) for f in data.files
    }
    window.tick = max((f.last_used for f in window.files.values()), default=0)
    window.file_uses = {f.path: FileUse(f.uses, f.first_use, f.last_use) for f in data.files if f.uses}
    window.history = [Turn(t.kind, _message(t.message), t.question, tuple(t.cites)) for t in data.history]
    window.frozen_volatile = None
    return [f.path for f in data.files if f.held and f.state == "current"]


def restore_stats(data: StatsIn) -> WorkspaceStats:
    values = data.model_dump()
    values["usage"] = Usage(**values["usage"])
    values["background_usage"] = Usage(**values["background_usage"])
    values["agents"] = dict(values["agents"])
    return WorkspaceStats(**values)


def _ledger(raw: LedgerIn | str | None) -> Ledger:
    if raw is None:
        return Ledger()
    if isinstance(raw, str):
        return Ledger(legacy_text=raw)
    facts = [LedgerFact(f.text, dict(f.sources), f.stale, f.team, f.shared) for f in raw.facts]
    dropped = [fact_key(d.text, d.sources) for d in raw.dropped]
    return Ledger(facts, raw.legacy_text, dropped)


def _message(raw: MessageIn) -> Message:
    parts: list[Part] = []
    for p in raw.parts:
        if isinstance(p, TextPartIn):
            parts.append(TextPart(p.text))
        elif isinstance(p, ToolUseIn):
            parts.append(ToolUsePart(p.id, p.name, dict(p.input)))
        else:
            parts.append(ToolResultPart(p.tool_use_id, p.content, p.is_error))
    return Message(raw.role, tuple(parts))
