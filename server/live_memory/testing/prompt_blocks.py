"""A prompt as the simulated provider sees it: ordered blocks with token counts, cache breakpoints and the
rolling keys the prompt cache (`prompt_cache.py`) stores, parsed from an Anthropic Messages or OpenAI Chat
Completions request body.

Token counting (``CHARS_PER_TOKEN`` = 4): a block counts ``ceil(len(serialization) / 4)`` tokens and the
prompt total is the sum over its blocks.

* Anthropic: each tool definition (``json.dumps(tool, sort_keys=True)`` without its ``cache_control``),
  each system text block (a string ``system`` is one block), then every content block of every message in
  order: ``text`` → its text; ``tool_use`` → name + ``json.dumps(input, sort_keys=True)``; ``tool_result``
  → the text of its content; a string content is one block; any other block type → ``json.dumps(block,
  sort_keys=True)`` without ``cache_control``. Blocks carrying ``cache_control`` are breakpoints (``"ttl":
  "1h"`` ones live an hour); a top-level ``cache_control`` adds one on the last block unless it has one.
* OpenAI: each tool (``json.dumps(tool, sort_keys=True)``), then each message as ``role + "\\n" + content
  text`` (+ ``"\\n" + json.dumps(tool_calls, sort_keys=True)`` when present).

The key of a position is a rolling sha256 over the model name and every block up to and including it (the
block's section/role/type and its serialization; never ``cache_control`` itself, so moving a breakpoint
does not change any key).

A conversation resends its whole prefix with every request: a :class:`Memo` remembers (bounded) each
block's identity and token count, each step of the key chain, each tool's serialization and the latest
request's messages with the blocks they made, so parsing a request costs little more than its new
messages; the figures are those a parse without a memo gives.

Public and typed for the fake provider of the tests, the benchmarks and `live-memory demo`; standard
library only (the demo runs from a plain install); the service never imports it.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from live_memory.providers.profiles import Protocol

__all__ = [
    "CHARS_PER_TOKEN",
    "Block",
    "Breakpoint",
    "Memo",
    "Prompt",
    "anthropic_prompt",
    "content_text",
    "count_tokens",
    "openai_prompt",
    "sorted_json",
]

# The simulation's own tokenizer and memory bounds (test tooling, not service settings).
CHARS_PER_TOKEN = 4
MEMO_LIMIT = 200_000  # blocks / chain steps a Memo remembers
MEMO_LIMIT_CHARS = 64_000_000  # and the characters of those blocks


def count_tokens(text: str) -> int:
    """The simulated token count of one serialized block."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


_SORTED_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # what json.dumps would build per call


def sorted_json(value: object) -> str:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False)``: how blocks are serialized."""
    return _SORTED_JSON.encode(value)


def _without_cache_control(value: object) -> object:
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if key != "cache_control"}
    return value


@dataclass(frozen=True, slots=True)
class Block:
    """One prompt block: its kind and serialization (what the cache keys) and its token count."""

    identity: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A ``cache_control`` mark on the block at ``index``; ``one_hour`` for ``"ttl": "1h"``."""

    index: int
    one_hour: bool


class Memo:
    """What a parser would otherwise recompute for every block of a conversation's unchanged prefix on every
    request: each block's identity and token count, and each step of the cache-key chain (sha256 of the
    previous key and the block). Both are functions of content alone, so a hit gives exactly what the
    computation would; a request then costs little more than its new blocks. Bounded: cleared when full."""

    def __init__(self, limit: int = MEMO_LIMIT, limit_chars: int = MEMO_LIMIT_CHARS) -> None:
        self.limit = limit
        self.limit_chars = limit_chars
        self.chars = 0
        self.blocks: dict[tuple[str, str], Block] = {}
        self.chain: dict[tuple[bytes, str], bytes] = {}
        # (protocol, index) -> (tool, its serialization, whether == tells that tool from others: see _plain)
        self.tools: dict[tuple[str, int], tuple[object, str, bool]] = {}
        self.resent: dict[str, _Resent] = {}  # by protocol: see _Resent
        self.latest_keys: tuple[str, list[Block], list[bytes]] | None = None  # model, blocks, their keys

    def block(self, kind: str, serialized: str) -> Block:
        key = (kind, serialized)
        block = self.blocks.get(key)
        if block is None:
            if len(self.blocks) >= self.limit or self.chars >= self.limit_chars:
                self.blocks.clear()
                self.chain.clear()
                self.chars = 0
            block = self.blocks[key] = _new_block(kind, serialized)
            self.chars += len(serialized)
        return block

    def tool(self, protocol: str, index: int, tool: object, serialize: Callable[[object], str]) -> str:
        """A tool definition's serialization, reused while the tool at that index stays the same JSON (a
        comparison is much cheaper than a sorted dump)."""
        seen = self.tools.get((protocol, index))
        if seen is not None and seen[0] == tool and (seen[2] or _same_json(seen[0], tool)):
            return seen[1]
        serialized = serialize(tool)
        self.tools[(protocol, index)] = (copy.deepcopy(tool), serialized, _plain(tool))
        return serialized

    def step(self, digest: bytes, identity: str) -> bytes:
        key = (digest, identity)
        following = self.chain.get(key)
        if following is None:
            if len(self.chain) >= self.limit:
                self.chain.clear()
            following = self.chain[key] = _chain_step(digest, identity)
        return following


_NO_MEMO: dict[Any, Any] = {}  # the lookup table of a prompt without a memo: always a miss


def _new_block(kind: str, serialized: str) -> Block:
    return Block(identity=f"{kind}\x1f{serialized}", tokens=count_tokens(serialized))


def _chain_step(digest: bytes, identity: str) -> bytes:
    return hashlib.sha256(digest + identity.encode()).digest()


@dataclass
class Prompt:
    """A request's blocks in prompt order and its breakpoints; build one with :func:`anthropic_prompt`,
    :func:`openai_prompt` or :meth:`add`."""

    blocks: list[Block] = field(default_factory=list)  # only ever appended to (see running_totals)
    breakpoints: list[Breakpoint] = field(default_factory=list)
    memo: Memo | None = None  # optional: reuse the work done for blocks seen before
    _sums: list[int] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def total(self) -> int:
        sums = self.running_totals()
        return sums[-1] if sums else 0

    def add(self, kind: str, serialized: str, cache_control: object = None) -> None:
        """Append a block; a ``cache_control`` dict makes it a breakpoint."""
        memo = self.memo
        self.blocks.append(_new_block(kind, serialized) if memo is None else memo.block(kind, serialized))
        if isinstance(cache_control, dict):
            one_hour = cache_control.get("ttl") == "1h"
            self.breakpoints.append(Breakpoint(len(self.blocks) - 1, one_hour))

    def running_totals(self) -> list[int]:
        """cumulative(), computed once per length of the prompt (a request asks for the total several times);
        the caller must not change it."""
        if len(self._sums) != len(self.blocks):
            self._sums = list(itertools.accumulate([block.tokens for block in self.blocks]))
        return self._sums

    def cumulative(self) -> list[int]:
        """The token count of each prefix: ``cumulative()[i]`` covers blocks 0..i."""
        return list(self.running_totals())

    def keys(self, model: str) -> list[bytes]:
        """The cache key of each prefix for ``model`` (see the module docstring)."""
        memo = self.memo
        if memo is None:
            digest = hashlib.sha256(model.encode()).digest()
            keys: list[bytes] = []
            for block in self.blocks:
                digest = _chain_step(digest, block.identity)
                keys.append(digest)
            return keys
        # The keys of the blocks this prompt shares with the latest one are that prompt's (memo blocks are
        # shared objects: the comparison is mostly identity checks); the chain continues from there.
        start, keys = 0, []
        latest = memo.latest_keys
        if latest is not None and latest[0] == model:
            start = _common_prefix(self.blocks, latest[1])
            keys = latest[2][:start]
        digest = keys[-1] if keys else hashlib.sha256(model.encode()).digest()
        known, step = memo.chain, memo.step
        append = keys.append
        for position in range(start, len(self.blocks)):
            identity = self.blocks[position].identity
            following = known.get((digest, identity))  # a hit skips the call
            digest = step(digest, identity) if following is None else following
            append(digest)
        memo.latest_keys = (model, list(self.blocks), keys)
        return keys


def content_text(content: object) -> str:
    """Text of a message content (string or list of blocks); tool results contribute their content text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("type") == "text" or ("text" in part and "type" not in part):
                    parts.append(str(part.get("text", "")))
                elif part.get("type") == "tool_result":
                    parts.append(content_text(part.get("content")))
                else:
                    parts.append(sorted_json(_without_cache_control(part)))
        return "\n".join(parts)
    return sorted_json(content)


def _anthropic_block(block: object) -> tuple[str, str]:
    """(kind, serialization) of one Anthropic content block."""
    if not isinstance(block, dict):
        return "raw", sorted_json(block)
    block_type = str(block.get("type", ""))
    if block_type == "text":
        return block_type, str(block.get("text", ""))
    if block_type == "tool_use":
        return block_type, str(block.get("name", "")) + sorted_json(block.get("input", {}))
    if block_type == "tool_result":
        return block_type, content_text(block.get("content"))
    return block_type, sorted_json(_without_cache_control(block))


def _anthropic_tool(tool: object) -> str:
    return sorted_json(_without_cache_control(tool))


def _tool_serialization(protocol: Protocol, index: int, tool: object, memo: Memo | None) -> str:
    serialize = _anthropic_tool if protocol == "anthropic" else sorted_json
    return serialize(tool) if memo is None else memo.tool(protocol, index, tool, serialize)


def anthropic_prompt(body: dict[str, Any], memo: Memo | None = None) -> tuple[Prompt, int]:
    """An Anthropic Messages body's blocks and breakpoints, and how many breakpoints it asked for (a provider
    refuses more than its maximum)."""
    prompt = Prompt(memo=memo)
    for index, tool in enumerate(body.get("tools") or []):
        cache_control = tool.get("cache_control") if isinstance(tool, dict) else None
        prompt.add("tool", _tool_serialization("anthropic", index, tool, memo), cache_control)
    system = body.get("system")
    if isinstance(system, str):
        if system:
            prompt.add("system:text", system)  # the same block as [{"type": "text", "text": system}]
    elif isinstance(system, list):
        for block in system:
            kind, serialized = _anthropic_block(block)
            cache_control = block.get("cache_control") if isinstance(block, dict) else None
            prompt.add(f"system:{kind}", serialized, cache_control)
    messages, offset, start, ends, inexact = _resume_messages(prompt, "anthropic", body)
    # The messages are most of a long conversation: prompt.add inlined, with the memo's hits looked up here.
    new_block, known = _block_lookup(memo)
    blocks, breakpoints = prompt.blocks, prompt.breakpoints
    for position in range(start, len(messages)):
        message = messages[position]
        if isinstance(message, dict):
            role = message.get("role", "")
            exact = isinstance(role, str)  # see _Resent
            role = str(role)
            content = message.get("content")
            if not isinstance(content, list):
                exact = exact and (content is None or isinstance(content, str))
                prompt.add(f"{role}:text", content_text(content))
            else:
                text_kind = role + ":text"
                for part in content:
                    if not isinstance(part, dict):
                        kind, serialized = _anthropic_block(part)
                        kind = f"{role}:{kind}"
                        cache_control = None
                        exact = exact and _plain(part)
                    else:
                        text = part.get("text") if part.get("type") == "text" else None
                        if isinstance(text, str):  # the common case, as _anthropic_block would give it
                            kind, serialized = text_kind, text
                        else:
                            kind, serialized = _anthropic_block(part)
                            kind = f"{role}:{kind}"
                            exact = exact and _plain(part)
                        cache_control = part.get("cache_control")
                    found = known.get((kind, serialized))
                    blocks.append(new_block(kind, serialized) if found is None else found)
                    if isinstance(cache_control, dict):
                        breakpoints.append(Breakpoint(len(blocks) - 1, cache_control.get("ttl") == "1h"))
            if not exact:
                inexact.append(position)
        ends.append(len(blocks) - offset)
    _remember_resent(prompt, "anthropic", messages, offset, ends, inexact)
    requested = len(prompt.breakpoints)
    automatic = body.get("cache_control")
    if isinstance(automatic, dict) and prompt.blocks:
        last = len(prompt.blocks) - 1
        if all(point.index != last for point in prompt.breakpoints):
            prompt.breakpoints.append(Breakpoint(last, automatic.get("ttl") == "1h"))
            requested += 1
    return prompt, requested


def openai_prompt(body: dict[str, Any], memo: Memo | None = None) -> Prompt:
    """An OpenAI Chat Completions body's blocks (no breakpoints: its caching is automatic)."""
    prompt = Prompt(memo=memo)
    for index, tool in enumerate(body.get("tools") or []):
        prompt.add("tool", _tool_serialization("openai", index, tool, memo))
    messages, offset, start, ends, inexact = _resume_messages(prompt, "openai", body)
    new_block, known = _block_lookup(memo)
    blocks = prompt.blocks
    for position in range(start, len(messages)):
        message = messages[position]
        if isinstance(message, dict):
            role = message.get("role", "")
            content = message.get("content")
            tool_calls = message.get("tool_calls")
            if isinstance(content, str):
                text, exact = content, isinstance(role, str)
            else:
                text, exact = content_text(content), isinstance(role, str) and _plain(content)
            serialized = f"{role}\n{text}"
            if tool_calls:
                serialized += "\n" + sorted_json(tool_calls)
                exact = exact and _plain(tool_calls)
            found = known.get(("message", serialized))
            blocks.append(new_block("message", serialized) if found is None else found)
            if not exact:
                inexact.append(position)
        ends.append(len(blocks) - offset)
    _remember_resent(prompt, "openai", messages, offset, ends, inexact)
    return prompt


def _resume_messages(
    prompt: Prompt, protocol: str, body: dict[str, Any]
) -> tuple[list[object], int, int, list[int], list[int]]:
    """The body's messages, with the blocks of those resent from the memo's latest request already in
    `prompt`: the messages, then what :func:`_reuse_resent` returns, for the caller to continue."""
    messages = _message_list(body)
    return (messages, *_reuse_resent(prompt, protocol, messages))


def _block_lookup(memo: Memo | None) -> tuple[Callable[[str, str], Block], dict[tuple[str, str], Block]]:
    """How a message's block is made, and the memo's table of blocks seen before (always a miss without one)."""
    return (_new_block, _NO_MEMO) if memo is None else (memo.block, memo.blocks)


def _message_list(body: dict[str, Any]) -> list[object]:
    messages = body.get("messages") or []
    # Anything else is iterated as it always was (a non-iterable raises the same TypeError).
    return messages if isinstance(messages, list) else list(messages)


# A conversation resends its messages with every request. The memo keeps the latest request's messages (per
# protocol) with the blocks they made; a request whose leading messages equal those reuses their blocks,
# found by comparing list slices (in C) instead of walking every block in Python.


@dataclass
class _Resent:
    """The messages of the latest request of one protocol, and what they made. Equal messages make the same
    blocks, except that == also matches 1, 1.0 and true (and 0.0 with -0.0), which serialize differently:
    a message holding a number or boolean where its blocks come from is listed in ``inexact`` and reused
    only when it is the same in type too (:func:`_same_json`)."""

    messages: list[object]
    ends: list[int]  # how many blocks messages[: i + 1] made
    blocks: list[Block]  # the blocks the messages made
    points: list[Breakpoint]  # the breakpoints among them (indices into blocks)
    inexact: list[int]  # ascending message indices


def _reuse_resent(prompt: Prompt, protocol: str, messages: list[object]) -> tuple[int, int, list[int], list[int]]:
    """Append the blocks (and breakpoints) of the messages this request shares with the memo's latest one;
    returns the offset of the messages' first block, how many messages were reused, and their ends and
    inexact lists, to be continued by the caller."""
    offset = len(prompt.blocks)
    resent = None if prompt.memo is None else prompt.memo.resent.get(protocol)
    if resent is None:
        return offset, 0, [], []
    start = _common_prefix(messages, resent.messages)
    for index in resent.inexact:
        if index >= start:
            break
        if not _same_json(messages[index], resent.messages[index]):
            start = index
            break
    if start == 0:
        return offset, 0, [], []
    made = resent.ends[start - 1]
    prompt.blocks += resent.blocks[:made]
    prompt.breakpoints += [Breakpoint(offset + p.index, p.one_hour) for p in resent.points if p.index < made]
    return offset, start, resent.ends[:start], [index for index in resent.inexact if index < start]


def _remember_resent(
    prompt: Prompt, protocol: str, messages: list[object], offset: int, ends: list[int], inexact: list[int]
) -> None:
    if prompt.memo is None:
        return
    points = [Breakpoint(p.index - offset, p.one_hour) for p in prompt.breakpoints if p.index >= offset]
    prompt.memo.resent[protocol] = _Resent(messages, ends, prompt.blocks[offset:], points, inexact)


def _common_prefix(new: Sequence[object], old: Sequence[object]) -> int:
    """How many leading items two lists share (==): a bisection comparing slices, each comparison in C."""
    size = min(len(new), len(old))
    if new[:size] == old[:size]:
        return size
    low, high = 0, size  # new[:low] == old[:low], new[:high] != old[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if new[low:middle] == old[low:middle]:
            low = middle
        else:
            high = middle
    return low


def _plain(value: object) -> bool:
    """Whether a JSON value holds no number or boolean (== then implies the same JSON, up to key order)."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(_plain(item) for item in value.values())
    return False


def _same_json(a: object, b: object) -> bool:
    """Equality that also tells 1, 1.0 and true apart (and 0.0 from -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(cast("list[object]", b)) and all(map(_same_json, a, cast("list[object]", b)))
    if isinstance(a, dict):
        other = cast("dict[str, object]", b)
        return a.keys() == other.keys() and all(_same_json(item, other[key]) for key, item in a.items())
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b
