"""The KV-cache invariants, checked on the requests the fake provider recorded.

Within a question's tool loop, every request minus its trailing per-question hint is a prefix (block for
block, byte for byte) of the next. From one question to the next, the new request extends the previous
one at least through the previous question (up to bp3); normally through its whole tool transcript too,
unless that transcript was too large to keep. Nothing of this holds across a compaction, which
re-freezes the window. The hint never appears anywhere but last.
A break is allowed only where the frozen block changed, and there may be no more such breaks than the
compactions the server reported. Summarizer calls are left out: standalone ones (their own system
prompt), and folds, which repeat the conversation up to an earlier question and ask for the ledger's
changes instead (`assert_folds_repeat_the_conversation` checks those).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from live_memory.core.prompts import FOLD_PREAMBLE, HINT_HEADING, SYSTEM_PROMPT

Block = tuple[str, str]


@dataclass
class Shape:
    blocks: list[Block]  # everything, in prompt order, cache_control stripped
    frozen: str
    breakpoints: list[int]  # block indices carrying cache_control (Anthropic only)

    @property
    def question_end(self) -> int:
        """Blocks up to and including the current question's block."""
        marks = [i for i, (role, text) in enumerate(self.blocks) if role == "user" and "## Question" in text]
        return marks[-1] + 1 if marks else 0

    @property
    def question(self) -> str:
        return self.blocks[self.question_end - 1][1] if self.question_end else ""

    @property
    def without_hint(self) -> list[Block]:
        if self.blocks and HINT_HEADING in self.blocks[-1][1]:
            return self.blocks[:-1]
        return self.blocks


def _strip(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def shape(body: dict[str, Any]) -> Shape:
    blocks: list[Block] = []
    breakpoints: list[int] = []
    for tool in body.get("tools", []):
        blocks.append(("tool", json.dumps(_strip(tool), sort_keys=True)))
    if "system" in body:
        system = body["system"]
        frozen = system[1]["text"] if len(system) > 1 else ""
        for block in system:
            if block.get("cache_control"):
                breakpoints.append(len(blocks))
            blocks.append(("system", block["text"]))
    else:
        first = body["messages"][0]
        frozen = first["content"] if first["role"] == "system" else ""
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("cache_control"):
                    breakpoints.append(len(blocks))
                text = block.get("text", "") if isinstance(block, dict) else ""
                blocks.append(
                    (message["role"], text if HINT_HEADING in text else json.dumps(_strip(block), sort_keys=True))
                )
        else:
            extra = json.dumps(message.get("tool_calls"), sort_keys=True) if message.get("tool_calls") else ""
            blocks.append((message["role"], f"{content}{extra}"))
    return Shape(blocks, frozen, breakpoints)


def is_fold(body: dict[str, Any]) -> bool:
    """A summarizer call that continues the conversation: its last turn asks for the ledger's changes."""
    last = body["messages"][-1].get("content") if body.get("messages") else ""
    texts = [last] if isinstance(last, str) else [b.get("text", "") for b in last or [] if isinstance(b, dict)]
    return any(FOLD_PREAMBLE in str(text) for text in texts)


def question_requests(bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the question path's requests (summarizer calls have their own system prompt, or are folds)."""
    out = []
    for body in bodies:
        system = body.get("system")
        first = system[0]["text"] if system else body["messages"][0]["content"]
        if str(first).startswith(SYSTEM_PROMPT[:60]) and not is_fold(body):
            out.append(body)
    return out


def assert_folds_repeat_the_conversation(bodies: Sequence[dict[str, Any]], *, kept: int) -> int:
    """Every fold repeats, block for block, all that an earlier question's request sent before that question
    (which the provider has cached), then adds only its own last turn; the `kept` latest questions are not in
    it (the fold stays neutral). Returns the folds seen."""
    folds = 0
    earlier: list[Shape] = []
    asked: list[str] = []
    for index, body in enumerate(bodies):
        if not is_fold(body):
            if question_requests([body]):
                earlier.append(shape(body))
                if earlier[-1].question not in asked:
                    asked.append(earlier[-1].question)
            continue
        folds += 1
        sent = shape(body).blocks
        repeats = any(s.question_end and s.blocks[: s.question_end - 1] == sent[:-1] for s in earlier)
        assert sent[-1][0] == "user" and repeats, f"fold {index} repeats no earlier question's request"
        leaked = [q for q in asked[-kept:] if q in (text for _, text in sent)]
        assert not leaked, f"fold {index} shows recent questions: {leaked}"
    return folds


def assert_prefix_invariant(bodies: Sequence[dict[str, Any]], *, compactions: int) -> int:
    """Check every consecutive pair; returns the number of compaction boundaries seen."""
    shapes = [shape(b) for b in question_requests(bodies)]
    boundaries = 0
    for index, current in enumerate(shapes):
        for position, (_, text) in enumerate(current.blocks[:-1]):
            assert HINT_HEADING not in text, f"request {index}: the volatile hint leaked to block {position}"
        if index == 0:
            continue
        previous = shapes[index - 1]
        if current.frozen != previous.frozen:
            boundaries += 1
            continue
        expected = previous.without_hint
        if current.question != previous.question and current.blocks[: len(expected)] != expected:
            expected = previous.blocks[: previous.question_end]  # the transcript was not kept: up to bp3
        got = current.blocks[: len(expected)]
        if got != expected:
            first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), len(got))
            wanted = expected[first] if first < len(expected) else None
            seen = got[first] if first < len(got) else None
            raise AssertionError(
                f"request {index} does not extend request {index - 1} at block {first}: {wanted!r} -> {seen!r}"
            )
    assert boundaries <= compactions, f"{boundaries} prefix breaks but only {compactions} compactions"
    return boundaries


def assert_breakpoints(body: dict[str, Any]) -> None:
    """Anthropic: bp1 and bp2 on the two system blocks, at most 4 in all, none on the hint."""
    s = shape(body)
    assert len(s.breakpoints) <= 4, s.breakpoints
    system_blocks = [i for i, (role, _) in enumerate(s.blocks) if role == "system"]
    assert s.breakpoints[:2] == system_blocks[:2], (s.breakpoints, system_blocks)
    assert len(s.blocks) - 1 not in s.breakpoints or HINT_HEADING not in s.blocks[-1][1], "a breakpoint on the hint"
