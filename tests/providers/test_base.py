"""The neutral provider contract: replaying an answer, message text, the wire encoders and the
cache of encoded history messages."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from functools import partial

import pytest

from live_memory.constants import WIRE_FRAGMENTS_KEPT
from live_memory.core.messages import ChatResponse, Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.core.records import ToolCall, Usage
from live_memory.providers.base import LazyClient, WireCache, wire_body, wire_json


def response(text: str, *calls: ToolCall) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, stop_reason="end_turn", usage=Usage(), model="m")


def user(text: str, *, cache: bool = False) -> Message:
    return Message("user", (TextPart(text, cache=cache),))


class CountingEncoder:
    def __init__(self) -> None:
        self.encoded: list[str] = []

    def __call__(self, message: Message) -> bytes:
        self.encoded.append(message.text)
        return message.text.encode()


def test_an_answer_is_replayed_as_its_text_then_its_tool_calls_in_order() -> None:
    replay = response("Looking.", ToolCall("t1", "Grep", {"pattern": "x"}), ToolCall("t2", "Read", {})).as_message()
    assert replay == Message(
        "assistant",
        (TextPart("Looking."), ToolUsePart("t1", "Grep", {"pattern": "x"}), ToolUsePart("t2", "Read", {})),
    )


def test_an_answer_with_only_tool_calls_is_replayed_without_an_empty_text_part() -> None:
    replay = response("", ToolCall("t1", "Glob", {"pattern": "*.py"})).as_message()
    assert replay.parts == (ToolUsePart("t1", "Glob", {"pattern": "*.py"}),)


def test_an_empty_answer_is_replayed_as_a_placeholder_because_providers_reject_empty_turns() -> None:
    assert response("").as_message() == Message("assistant", (TextPart("(no answer)"),))


def test_message_text_joins_only_the_text_parts() -> None:
    message = Message("user", (TextPart("a"), ToolResultPart("t1", "ignored"), TextPart("b")))
    assert message.text == "ab"


def test_wire_json_is_compact_utf8_and_refuses_nan() -> None:
    assert wire_json({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    with pytest.raises(ValueError):
        wire_json({"x": math.nan})


def test_wire_body_appends_the_encoded_items_as_an_array_skipping_empty_ones() -> None:
    body = wire_body(wire_json({"model": "m", "max_tokens": 5}), "messages", [b'{"n":1}', b"", b'{"n":2}'])
    assert json.loads(body) == {"model": "m", "max_tokens": 5, "messages": [{"n": 1}, {"n": 2}]}
    assert json.loads(wire_body(b"{}", "messages", [])) == {"messages": []}


def test_a_request_head_is_encoded_once_while_its_key_repeats_and_afresh_when_it_changes() -> None:
    cache = WireCache()
    built: list[str] = []

    def head(system: str) -> dict[str, str]:
        built.append(system)
        return {"system": system}

    assert cache.fragment(("m", "prompt A"), None, lambda: head("prompt A")) == b'{"system":"prompt A"}'
    assert cache.fragment(("m", "prompt A"), None, lambda: head("prompt A")) == b'{"system":"prompt A"}'
    assert cache.fragment(("m", "prompt B"), None, lambda: head("prompt B")) == b'{"system":"prompt B"}'
    assert built == ["prompt A", "prompt B"]


def test_only_a_handful_of_request_heads_are_kept() -> None:
    cache = WireCache()
    built: list[int] = []

    def head(n: int) -> dict[str, int]:
        built.append(n)
        return {"n": n}

    for n in (*range(WIRE_FRAGMENTS_KEPT + 1), 0):  # one more than kept, then the first again
        cache.fragment(n, None, partial(head, n))
    assert built == [*range(WIRE_FRAGMENTS_KEPT + 1), 0]  # the oldest was dropped: encoded again


def test_history_messages_are_encoded_once_across_requests() -> None:
    cache, encode = WireCache(), CountingEncoder()
    history = (user("one"), user("two"), user("three"))
    first = list(cache.encode_all(history, encode))
    second = list(cache.encode_all((*history, user("four")), encode))
    # A leading run of plain messages may come back joined (one item): the body is the same bytes.
    assert b",".join(first) == b"one,two,three"
    assert b",".join(second) == b"one,two,three,four"
    # "three" was last (per request) the first time, so it is encoded again once; "one"/"two" never are
    assert encode.encoded == ["one", "two", "three", "three", "four"]


def test_the_last_message_and_breakpoint_copies_are_encoded_every_time() -> None:
    cache, encode = WireCache(), CountingEncoder()
    history = (user("marked", cache=True), user("last"))
    for _ in range(3):
        assert list(cache.encode_all(history, encode)) == [b"marked", b"last"]
    assert encode.encoded == ["marked", "last"] * 3


def test_least_recently_used_messages_are_dropped_past_the_byte_cap() -> None:
    cache, encode = WireCache(max_bytes=10), CountingEncoder()
    a, b, c = user("aaaa"), user("bbbb"), user("cccc")
    cache.encoded(a, encode)
    cache.encoded(b, encode)
    cache.encoded(a, encode)  # a is now the most recently used
    cache.encoded(c, encode)  # 12 bytes > 10: b goes
    cache.encoded(a, encode)
    cache.encoded(b, encode)
    assert encode.encoded == ["aaaa", "bbbb", "cccc", "bbbb"]


def test_a_message_larger_than_the_cap_is_still_encoded_correctly_but_not_kept() -> None:
    cache, encode = WireCache(max_bytes=3), CountingEncoder()
    big = user("too big")
    assert cache.encoded(big, encode) == b"too big"
    assert cache.encoded(big, encode) == b"too big"
    assert encode.encoded == ["too big", "too big"]


async def test_a_lazy_client_is_built_once_off_the_event_loop_however_many_ask_at_once() -> None:
    threads: list[threading.Thread] = []

    def build() -> object:
        threads.append(threading.current_thread())
        return object()

    lazy = LazyClient(build)
    assert lazy.built is None  # nothing built (nor its SDK imported) before the first request
    clients = await asyncio.gather(*(lazy.get() for _ in range(5)))
    assert len(threads) == 1 and threads[0] is not threading.current_thread()
    assert all(c is clients[0] for c in clients) and lazy.built is clients[0]
