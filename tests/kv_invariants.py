"""The KV-cache invariants, checked on the requests the fake provider recorded.

For consecutive question requests with no compaction between them:
- the persistent prefix (tools, system blocks, history up to the question turn) of each request
  extends the previous request's prefix block for block, byte for byte;
- within one question, each tool-loop request extends the previous request entirely;
- the volatile trailing hint never appears inside any prefix.
A break is allowed only where the frozen block changed (a compaction re-froze it), and the
number of such breaks must not exceed the compactions the server reported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from live_memory.prompts import HINT_HEADING, QUESTION_HEADING, SYSTEM_PROMPT

Block = tuple[str, str]


@dataclass
class Shape:
    blocks: list[Block]  # everything, in prompt order
    prefix_len: int  # blocks before the question turn
    question: str
    frozen: str
    breakpoints: list[int]  # block indices carrying cache_control (Anthropic only)


def _strip(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def shape(body: dict[str, Any]) -> Shape:
    blocks: list[Block] = []
    breakpoints: list[int] = []
    is_anthropic = "system" in body
    for tool in body.get("tools", []):
        blocks.append(("tool", json.dumps(_strip(tool), sort_keys=True)))
    if is_anthropic:
        system = body["system"]
        frozen = system[1]["text"] if len(system) > 1 else ""
        for block in system:
            if block.get("cache_control"):
                breakpoints.append(len(blocks))
            blocks.append(("system", block["text"]))
        messages = body["messages"]
    else:
        messages = body["messages"]
        frozen = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    question_at = None
    question = ""
    for index, message in enumerate(messages):
        content = message.get("content")
        text = _text_of(content) if content is not None else ""
        if message["role"] == "user" and text.startswith(QUESTION_HEADING) and HINT_HEADING in text:
            question_at, question = index, text
    prefix_len = 0
    for index, message in enumerate(messages):
        if index == question_at:
            prefix_len = len(blocks)
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("cache_control"):
                    breakpoints.append(len(blocks))
                blocks.append((message["role"], json.dumps(_strip(block), sort_keys=True)))
        else:
            extra = json.dumps(message.get("tool_calls"), sort_keys=True) if message.get("tool_calls") else ""
            blocks.append((message["role"], f"{content}{extra}"))
    if question_at is None:
        raise AssertionError("request has no question turn")
    return Shape(blocks, prefix_len, question, frozen, breakpoints)


def question_requests(bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the question path's requests (summarizer calls have their own system prompt)."""
    out = []
    for body in bodies:
        system = body.get("system")
        first = system[0]["text"] if system else body["messages"][0]["content"]
        if str(first).startswith(SYSTEM_PROMPT[:60]):
            out.append(body)
    return out


def assert_prefix_invariant(bodies: Sequence[dict[str, Any]], *, compactions: int) -> int:
    """Check every consecutive pair; returns the number of compaction boundaries seen."""
    shapes = [shape(b) for b in question_requests(bodies)]
    boundaries = 0
    for index, current in enumerate(shapes):
        prefix = current.blocks[: current.prefix_len]
        for _, text in prefix:
            assert HINT_HEADING not in text, f"request {index}: the volatile hint leaked into the prefix"
        if index == 0:
            continue
        previous = shapes[index - 1]
        if current.frozen != previous.frozen:
            boundaries += 1
            continue
        if current.question == previous.question and current.prefix_len == previous.prefix_len:
            expected = previous.blocks  # a tool-loop iteration extends the whole previous request
        else:
            expected = previous.blocks[: previous.prefix_len]
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
    """Anthropic: bp1 and bp2 on the two system blocks, bp3 on the last history block, <= 4 in all."""
    s = shape(body)
    assert len(s.breakpoints) <= 4, s.breakpoints
    system_blocks = [i for i, (role, _) in enumerate(s.blocks) if role == "system"]
    assert s.breakpoints[:2] == system_blocks[:2], (s.breakpoints, system_blocks)
    if s.prefix_len > system_blocks[-1] + 1:
        assert s.prefix_len - 1 in s.breakpoints, "bp3 must sit on the last history block"
