"""Guards for the fast paths: each must send, or decide, exactly what the slow path it replaces did."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from live_memory.core.errors import JailRefusal
from live_memory.core.messages import ChatRequest, Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.fs.jail import Jail
from live_memory.providers import anthropic as anthropic_adapter
from live_memory.providers import openai_compat
from live_memory.providers.base import WireCache

HISTORY = (
    Message("user", (TextPart('where is "x"? é \u2028 ✓'),)),
    Message("assistant", (TextPart("looking"), ToolUsePart("t1", "grep", {"pattern": "x", "n": 1}))),
    Message("user", (ToolResultPart("t1", "no such file", is_error=True), ToolResultPart("t2", "ok"), TextPart("+"))),
    Message("assistant", (TextPart("in app.py", cache=True),)),
    Message("user", (TextPart("and y?"), TextPart("hint: answer briefly"))),
)
TOOLS = ({"name": "grep", "description": "search", "input_schema": {"type": "object", "properties": {}}},)


@pytest.mark.parametrize("tools", [(), TOOLS])
@pytest.mark.parametrize("system", [(), (TextPart("prompt", cache=True), TextPart("frozen", cache=True))])
def test_encoded_requests_carry_exactly_the_request_body_on_every_call(
    tools: tuple[dict[str, object], ...], system: tuple[TextPart, ...]
) -> None:
    request = ChatRequest(system=system, messages=HISTORY, max_tokens=99, tools=tools, cache_key="ws")
    claude, gpt = WireCache(), WireCache()
    for _ in range(2):  # the second call is served from the caches
        sent = json.loads(anthropic_adapter.encode_request(request, "m", claude))
        assert sent == anthropic_adapter.request_body(request, "m")
        sent = json.loads(openai_compat.encode_request(request, "m", gpt, {"prompt_cache_key": "ws"}))
        assert sent == {**openai_compat.request_body(request, "m"), "prompt_cache_key": "ws"}


def test_the_wire_cache_keeps_only_history_messages_and_stays_within_its_byte_cap() -> None:
    cache = WireCache(max_bytes=64)
    encoded = list(cache.encode_all(HISTORY, lambda m: m.text.encode()))
    assert b",".join(encoded) == b",".join(m.text.encode() for m in HISTORY)
    # the breakpoint copy and the last message (the hint) are per-request: never kept
    assert all(m is not HISTORY[3] and m is not HISTORY[4] for m, _ in cache._entries.values())
    assert cache._bytes <= 64


def test_a_growing_then_rewritten_conversation_is_sent_exactly_on_every_call() -> None:
    """The joined run of a conversation's plain messages is reused while it grows, and dropped when the
    history is rewritten (a compaction) or another conversation shares the cache."""
    claude, gpt = WireCache(), WireCache()
    history = list(HISTORY[:3])
    other = [Message("user", (TextPart("another workspace"),)), Message("assistant", (TextPart("hi"),))]

    def check(messages: list[Message]) -> None:
        request = ChatRequest(system=(), messages=tuple(messages), max_tokens=9, tools=(), cache_key="ws")
        assert json.loads(anthropic_adapter.encode_request(request, "m", claude)) == anthropic_adapter.request_body(
            request, "m"
        )
        sent = json.loads(openai_compat.encode_request(request, "m", gpt, {}))
        assert sent == openai_compat.request_body(request, "m")

    for turn in range(4):
        history += [Message("user", (TextPart(f"question {turn}"),)), Message("assistant", (TextPart(f"a{turn}"),))]
        check([*history, HISTORY[3], HISTORY[4]])  # a breakpoint copy, then the question with its hint
        check([*other, Message("user", (TextPart("q"),))])
    history[1] = Message("assistant", (TextPart("rewritten by a compaction"),))
    check([*history, HISTORY[4]])
    check(history[2:])


def test_jail_resolves_plain_paths_and_symlinks_as_realpath_does(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "outside.py").write_text("secret\n")
    os.symlink(root / "src" / "pkg", root / "link")
    os.symlink(tmp_path / "outside.py", root / "escape.py")
    jail = Jail(root)
    assert jail.resolve("src/pkg/a.py") == Path(os.path.realpath(root / "src/pkg/a.py"))
    assert jail.resolve("src/missing/b.py") == Path(os.path.realpath(root)) / "src/missing/b.py"
    assert jail.resolve("link/a.py") == Path(os.path.realpath(root / "src/pkg/a.py"))
    assert jail.resolve("src", allow_dir=True) == Path(os.path.realpath(root / "src"))
    with pytest.raises(JailRefusal, match="directory"):
        jail.resolve("src/pkg")
    with pytest.raises(JailRefusal, match="outside the workspace"):
        jail.resolve("escape.py")
