"""Frozen value types shared across the service, and the token estimate.

"Model" in this code base means the LLM, so these are records, not models. Nothing here does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from live_memory.constants import CHARS_PER_TOKEN

EventKind = Literal["read", "write", "change", "add", "unlink"]
MAX_IGNORE_REASONS = 50


def estimate_tokens(text: str, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Cheap token estimate (Anthropic ships no local tokenizer); calibrated against usage elsewhere."""
    if not text:
        return 0
    return math.ceil(len(text) / chars_per_token)


@dataclass(frozen=True)
class Usage:
    """Normalised token usage of one or more provider calls.

    `input_tokens` is the uncached part only, so the whole prompt is
    input + cache_read + cache_write (the Anthropic rule; OpenAI's totals are split the same way).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # the part of cache_write_tokens written for an hour (priced higher)

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionResult:
    """What answering one question produced; rendered as answer text plus the metadata trailer."""

    answer: str
    model: str
    latency_s: float
    usage: Usage
    tool_calls: int
    files_read: int
    cost_usd: float | None  # None on the subscription credential (not metered)
    context_used_tokens: int
    context_total_tokens: int
    timed_out: bool = False
    error: str | None = None

    def trailer(self) -> str:
        cost = "n/a(subscription)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        fill = self.context_used_tokens / self.context_total_tokens if self.context_total_tokens else 0.0
        prompt = self.usage.prompt_tokens
        cached = self.usage.cache_read_tokens / prompt if prompt else 0.0
        flags = " timed_out=true" if self.timed_out else ""
        flags += " partial=true" if self.error else ""
        # Short on purpose: the calling agent carries this line in its context for the rest of its session.
        return (
            "---\n[live-memory] "
            f"model={self.model} latency={self.latency_s:.1f}s "
            f"tokens={prompt}/{self.usage.output_tokens}(in/out) cached={cached:.0%} "
            f"tool_calls={self.tool_calls} files_read={self.files_read} cost={cost} context={fill:.0%}{flags}"
        )

    def render(self) -> str:
        return f"{self.answer.rstrip()}\n\n{self.trailer()}"


@dataclass(frozen=True)
class TeamFact:
    """One ledger fact as the team store keeps it: where it holds (the repository's identity, and each file it
    rests on with that file's SHA-256 when learned), who learned it, and when it was learned and last confirmed
    (unix seconds). Only the fact travels, never the questions or answers it came from. `user` and `machine` are
    what the writer says of itself; `author` is what the store's database proves."""

    repo: str
    text: str
    sources: Mapping[str, str]  # path -> sha256 hex
    machine: str
    user: str
    learned_at: float
    confirmed_at: float
    author: str = ""  # the role the store's database recorded as the writer (empty: not pulled, not proven)
    row_id: int = 0  # the store's id of the row (0: not pulled)


@dataclass(frozen=True)
class TeamAnswer:
    """A question and the answer a teammate's server gave, as the team store keeps them (only with
    `team_share_answers` on): the repository, the files the answer rests on with their SHA-256 then, who asked,
    and when it was first given and last given again. `key` is the question with case and whitespace folded."""

    repo: str
    question: str
    answer: str
    sources: Mapping[str, str]  # path -> sha256 hex
    machine: str
    user: str
    learned_at: float
    confirmed_at: float
    author: str = ""  # the role the store's database recorded as the writer (empty: not pulled, not proven)
    row_id: int = 0  # the store's id of the row (0: not pulled)

    @property
    def key(self) -> str:
        return question_key(self.question)


def question_key(question: str) -> str:
    """What makes two questions the same one: their words, case folded."""
    return " ".join(question.casefold().split())


@dataclass(frozen=True)
class FileEvent:
    """One file event from a hook tee, the OS watcher or a test: `path` absolute or workspace-relative."""

    path: str
    kind: EventKind
    content: str | None = None


@dataclass
class IngestResult:
    """What /notify reports back: accepted and ignored events, with the first reasons for ignoring."""

    accepted: int = 0
    ignored: int = 0
    reasons: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # the events' files inside the workspace (for the symbol index)

    def ignore(self, path: str, reason: str) -> None:
        self.ignored += 1
        if len(self.reasons) < MAX_IGNORE_REASONS:
            self.reasons.append(f"{path}: {reason}")
