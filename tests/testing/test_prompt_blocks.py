"""Request bodies as the simulated provider counts and keys them; a memo changes the cost, never the figures."""

from __future__ import annotations

from typing import Any

from live_memory.testing.prompt_blocks import Memo, Prompt, anthropic_prompt, count_tokens, openai_prompt

EPHEMERAL = {"type": "ephemeral"}


def body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {turn} " * 30}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} " * 40}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "last", "cache_control": EPHEMERAL}]})
    return {
        "tools": [{"name": "Read", "input_schema": {"type": "object"}, "cache_control": EPHEMERAL}],
        "system": [{"type": "text", "text": "system " * 100, "cache_control": EPHEMERAL}],
        "messages": messages,
    }


def test_an_anthropic_body_is_tools_then_system_then_every_content_block() -> None:
    parsed, requested = anthropic_prompt(body(1))
    assert len(parsed.blocks) == 1 + 1 + 3
    assert [point.index for point in parsed.breakpoints] == [0, 1, 4]
    assert requested == 3
    assert parsed.blocks[1].tokens == count_tokens("system " * 100)
    assert parsed.total == sum(block.tokens for block in parsed.blocks) == parsed.cumulative()[-1]


def test_a_top_level_cache_control_marks_the_last_block_once() -> None:
    automatic = {**body(0), "cache_control": EPHEMERAL}
    assert anthropic_prompt(automatic)[1] == 3  # the last block already carries one
    unmarked = {"system": "s", "messages": [{"role": "user", "content": "q"}], "cache_control": EPHEMERAL}
    parsed, requested = anthropic_prompt(unmarked)
    assert requested == 1 and parsed.breakpoints[0].index == len(parsed.blocks) - 1


def test_an_openai_message_is_one_block_of_its_role_and_text() -> None:
    parsed = openai_prompt({"messages": [{"role": "user", "content": "hello there"}]})
    assert [block.tokens for block in parsed.blocks] == [count_tokens("user\nhello there")]
    assert parsed.breakpoints == []


def test_keys_follow_the_content_and_the_model_not_the_breakpoints() -> None:
    marked, plain = Prompt(), Prompt()
    marked.add("user:text", "same", EPHEMERAL)
    plain.add("user:text", "same")
    assert marked.keys("m") == plain.keys("m")
    assert marked.keys("m") != marked.keys("other-model")


def test_a_memo_gives_the_figures_a_fresh_parse_gives_as_a_conversation_grows() -> None:
    memo = Memo()
    for turns in (1, 2, 5, 3):  # a shorter conversation after a longer one: a compaction
        remembered, requested = anthropic_prompt(body(turns), memo)
        fresh, fresh_requested = anthropic_prompt(body(turns))
        assert [b.identity for b in remembered.blocks] == [b.identity for b in fresh.blocks]
        assert remembered.breakpoints == fresh.breakpoints and requested == fresh_requested
        assert remembered.keys("m") == fresh.keys("m")
