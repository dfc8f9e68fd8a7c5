"""What every wire adapter shares: a lazily built SDK client, and the cache of request fragments already
serialized; and the contract every adapter implements (`ChatProvider`). The messages themselves are
`live_memory.core.messages`.

Nothing outside `providers/` imports an SDK.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

from live_memory.constants import WIRE_CACHE_MAX_BYTES, WIRE_FRAGMENTS_KEPT
from live_memory.core.messages import ChatRequest, ChatResponse, Message, ProviderInfo

Client = TypeVar("Client")


class ChatProvider(Protocol):
    info: ProviderInfo

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One model call. Raises only `live_memory.core.errors.ProviderError` subclasses."""
        ...

    async def aclose(self) -> None: ...


class LazyClient(Generic[Client]):
    """An SDK client built on first use, in a worker thread: importing a provider SDK costs seconds of CPU,
    which a server that has not been asked anything yet should not pay, nor its event loop wait on."""

    def __init__(self, build: Callable[[], Client]) -> None:
        self._build = build
        self.built: Client | None = None
        self._building = asyncio.Lock()

    async def get(self) -> Client:
        if self.built is not None:
            return self.built
        async with self._building:
            if self.built is None:
                self.built = await asyncio.to_thread(self._build)
            return self.built


_WIRE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _flagged(message: Message) -> bool:
    """A per-request copy carrying a breakpoint flag."""
    return any(p.cache for p in message.parts)


def wire_json(body: Any) -> bytes:
    """A request body as the SDKs would encode it (compact UTF-8 JSON).

    The adapters send these bytes as the raw request content: the SDKs' `create()` methods first walk
    and copy the whole body (type transforms, file detection) and that walk costs more CPU than the
    call itself on a long prompt, for a body that is already plain JSON-ready data.
    """
    return _WIRE_JSON.encode(body).encode()


def wire_body(head: bytes, key: str, items: Iterable[bytes]) -> bytes:
    """The encoded JSON object `head` with `key` added: a JSON array of already encoded items (empty ones
    skipped)."""
    array = b",".join(item for item in items if item)  # the conversation: copied once more below, not thrice
    member = json.dumps(key).encode() + b":["
    if head == b"{}":
        return b"".join((b"{", member, array, b"]}"))
    return b"".join((head[:-1], b",", member, array, b"]}"))


class WireCache:
    """Encoded messages by identity. A workspace's history messages are the same objects in every
    request until a compaction replaces them, so each is encoded once, not once per call.

    Entries hold their message, so an id is never reused while its entry lives; least recently used
    entries go once the encoded bytes pass `max_bytes`. Per-request copies (a breakpoint flag, the
    hint on the last message) are encoded each time and never kept.

    On top, the longest run of plain messages a request starts with is kept joined (one per
    conversation, by its first message): the next request of that conversation repeats the run, so
    it is checked by identity and reused whole, and only the messages after it are looked up.
    """

    def __init__(self, max_bytes: int = WIRE_CACHE_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._fragments: OrderedDict[Hashable, tuple[object, bytes]] = OrderedDict()
        self._entries: OrderedDict[int, tuple[Message, bytes]] = OrderedDict()
        self._bytes = 0
        self._runs: OrderedDict[int, tuple[tuple[Message, ...], bytes]] = OrderedDict()
        self._run_bytes = 0

    def fragment(self, key: Hashable, held: object, build: Callable[[], Any]) -> bytes:
        """`wire_json(build())`, encoded once while `key` repeats. The fields before the messages (system
        prompt, tool schemas) change only with a workspace's prompt head, so most requests reuse their
        ~6 KB of JSON. `key` may name objects by `id()`: `held` keeps them alive while the entry lives,
        so no id is reused meanwhile. A handful of entries are kept (`WIRE_FRAGMENTS_KEPT`)."""
        entry = self._fragments.get(key)
        if entry is not None:
            self._fragments.move_to_end(key)
            return entry[1]
        data = wire_json(build())
        self._fragments[key] = (held, data)
        while len(self._fragments) > WIRE_FRAGMENTS_KEPT:
            self._fragments.popitem(last=False)
        return data

    def encode_all(self, messages: Sequence[Message], encode: Callable[[Message], bytes]) -> Iterator[bytes]:
        """Each message's bytes (a run of them may come joined with commas, as one item)."""
        last = len(messages) - 1
        start, joined = self._run(messages, last, encode)
        if joined:
            yield joined
        for index in range(start, last + 1):
            message = messages[index]
            if index == last or _flagged(message):
                yield encode(message)
            else:
                yield self.encoded(message, encode)

    def _run(self, messages: Sequence[Message], last: int, encode: Callable[[Message], bytes]) -> tuple[int, bytes]:
        """How many leading messages are plain (never the last one), and their bytes joined."""
        if last <= 0 or _flagged(messages[0]):
            return 0, b""
        key = id(messages[0])
        held, joined = self._runs.pop(key, ((), b""))
        self._run_bytes -= len(joined)
        if len(held) > last or tuple(messages[: len(held)]) != held:  # not this conversation's run any more
            held, joined = (), b""
        end = len(held)
        added: list[bytes] = []
        while end < last and not _flagged(messages[end]):
            added.append(self.encoded(messages[end], encode))
            end += 1
        if added:
            joined = b",".join(item for item in (joined, *added) if item)
            held = tuple(messages[:end])
        self._runs[key] = (held, joined)
        self._run_bytes += len(joined)
        while self._run_bytes > self.max_bytes and self._runs:
            _, (_, dropped) = self._runs.popitem(last=False)
            self._run_bytes -= len(dropped)
        return end, joined

    def encoded(self, message: Message, encode: Callable[[Message], bytes]) -> bytes:
        key = id(message)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is message:
            self._entries.move_to_end(key)
            return entry[1]
        data = encode(message)
        if entry is not None:
            self._bytes -= len(entry[1])
        self._entries[key] = (message, data)
        self._bytes += len(data)
        while self._bytes > self.max_bytes and self._entries:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)
        return data
