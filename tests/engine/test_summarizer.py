"""The neutral summarizer: one model call that merges retired material into the ledger, fed nothing but
the ledger and that material, with its output capped; retired Q&A folds by continuing the conversation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from live_memory.constants import MAX_TRANSCRIPT_CHARS, SUMMARY_MAX_TOKENS
from live_memory.core.errors import OverloadedError
from live_memory.core.messages import Message, TextPart
from live_memory.core.prompts import (
    FROZEN_LEDGER_POINTER,
    HINT_HEADING,
    LEDGER_RENUMBERED,
    NEUTRAL_SUMMARY_SYSTEM_PROMPT,
    NEWLY_STALE_FACTS,
    QUESTION_HEADING,
    fold_request_text,
)
from live_memory.core.records import ToolCall, Usage
from live_memory.engine.prompt_layout import Prompt
from live_memory.engine.summarizer import Conversation, Summarizer
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.history import Sent, Turn
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.windows import ask, sha

TOOLS = ({"name": "Read", "description": "read a file", "input_schema": {"type": "object"}},)
NOW = 10_000.0
CONVERSATION = Conversation(TOOLS, "history", lifetime_s=300.0, clock=lambda: NOW)


async def test_one_call_merges_the_material_into_the_ledger() -> None:
    usage = Usage(input_tokens=900, output_tokens=80)
    provider = ScriptedProvider(text_response("\n- Auth lives in src/auth/\n- Uses Postgres\n\n", usage=usage))
    summary = await Summarizer(provider).summarize("- Uses Postgres", "Q: where is auth?\nA: src/auth/")
    assert summary.changes == "- Auth lives in src/auth/\n- Uses Postgres"
    assert (summary.usage, summary.model) == (usage, "scripted-model")
    [request] = provider.requests
    assert [p.text for p in request.system] == [NEUTRAL_SUMMARY_SYSTEM_PROMPT.format(max_tokens=SUMMARY_MAX_TOKENS)]
    assert [m.role for m in request.messages] == ["user"]
    assert request.messages[0].text == (
        "## Current ledger\n- Uses Postgres\n\n## Material being retired from memory\nQ: where is auth?\nA: src/auth/"
    )
    assert (request.max_tokens, request.tools, request.model) == (SUMMARY_MAX_TOKENS, (), None)


async def test_the_call_is_neutral_with_no_question_and_no_cache_breakpoints() -> None:
    provider = ScriptedProvider(text_response("- fact"))
    await Summarizer(provider).summarize("", "### src/app.py\nVALUE = 1")
    [request] = provider.requests
    assert QUESTION_HEADING not in str(request) and HINT_HEADING not in str(request)
    assert not any(p.cache for p in request.system) and not any(p.cache for p in request.messages[0].parts)
    assert "## Current ledger\n(empty)\n" in request.messages[0].text


async def test_a_separate_summary_model_and_output_cap_are_used_when_configured() -> None:
    provider = ScriptedProvider(text_response("- fact"))
    await Summarizer(provider, model="claude-haiku-4-5", max_tokens=512).summarize("", "material")
    [request] = provider.requests
    assert (request.model, request.max_tokens) == ("claude-haiku-4-5", 512)
    assert "well under 512 tokens" in request.system[0].text
    await Summarizer(provider, model="").summarize("", "material")
    assert provider.requests[-1].model is None  # empty: the provider's own model


async def test_oversized_material_is_truncated_with_a_marker() -> None:
    provider = ScriptedProvider(text_response("- fact"))
    await Summarizer(provider).summarize("", "x" * (MAX_TRANSCRIPT_CHARS + 1000))
    sent = provider.requests[0].messages[0].text
    assert sent.endswith("x" * 10 + "\n[material truncated]")
    assert sent.count("x") == MAX_TRANSCRIPT_CHARS


async def test_a_provider_failure_reaches_the_caller_which_decides_what_to_keep() -> None:
    provider = ScriptedProvider(OverloadedError("overloaded"))
    with pytest.raises(OverloadedError, match="overloaded"):
        await Summarizer(provider).summarize("- a fact", "material")


def three_questions(
    second_sent_at: float = NOW - 120, sent: list[Prompt] | None = None
) -> tuple[ContextWindow, int, str]:
    """A window that asked three questions with long answers (the ledger holds one fact); returns it, the
    second question's turn (the oldest kept one) and the first exchange as the standalone material."""
    window = ContextWindow(budget_tokens=50_000)
    window.record_read("src/auth.py", sha("auth"), 100)
    window.ledger.set_from_summary("src/auth.py issues tokens", {"src/auth.py": sha("auth")})
    answer = "Tokens are issued by src/auth.py:1-20, checked by src/api.py:5-9. " * 40
    ask(window, "where is auth?", answer, cites=("src/auth.py",), sent_at=NOW - 240, sent=sent)
    ask(window, "who calls it?", answer, sent_at=second_sent_at, sent=sent)
    ask(window, "what is new?", "nothing", sent_at=NOW - 60, sent=sent)
    cut = next(i for i, t in enumerate(window.history) if t.question == "who calls it?")
    return window, cut, f"Q: where is auth?\nFiles read: src/auth.py\nA: {answer}"


async def first_request(
    window: ContextWindow, cut: int, material: str, conversation: Conversation = CONVERSATION
) -> str:
    provider = ScriptedProvider(text_response("(no change)"))
    await Summarizer(provider, conversation=conversation).fold_history(window, cut, material, [])
    return "fold" if provider.requests[0].tools else "standalone"


async def test_a_fold_repeats_what_the_oldest_kept_question_was_sent_with_then_asks_for_changes() -> None:
    sent: list[Prompt] = []
    window, cut, material = three_questions(sent=sent)
    provider = ScriptedProvider(text_response("+ src/api.py calls src/auth.py", usage=Usage(input_tokens=700)))
    summarizer = Summarizer(provider, conversation=CONVERSATION)
    summary = await summarizer.fold_history(window, cut, material, ["src/auth.py"], cache_key="workspace-key")
    assert (summary.changes, summary.usage) == ("+ src/api.py calls src/auth.py", Usage(input_tokens=700))
    [request] = provider.requests
    # Everything before its last turn is what the second question's request sent before that question, with
    # the same breakpoints: the provider has it cached.
    asked_system, asked_messages = sent[1]
    assert (request.system, request.messages[:-1]) == (asked_system, asked_messages[:-1])
    assert (request.tools, request.cache_key) == (TOOLS, "workspace-key")
    assert "who calls it?" not in str(request) and "what is new?" not in str(request)  # kept ones stay out
    instruction = request.messages[-1]
    assert instruction.role == "user" and not any(p.cache for p in instruction.parts)  # nothing later reads it
    # The frozen block numbers the same facts: the fold points at them instead of sending them again.
    assert "1. src/auth.py issues tokens" in request.system[1].text
    assert instruction.text == fold_request_text(FROZEN_LEDGER_POINTER, SUMMARY_MAX_TOKENS, ["src/auth.py"])
    assert "Files read for them: src/auth.py" in instruction.text and "call no tool" in instruction.text
    assert window.history[cut].question == "who calls it?" and len(window.history) == 6  # the window is untouched


async def test_a_fold_answered_with_tool_calls_is_redone_as_a_standalone_call() -> None:
    window, cut, material = three_questions()
    wandered = text_response("", tool_calls=(ToolCall("c1", "Read", {"file_path": "src/api.py"}),), usage=Usage(5, 1))
    provider = ScriptedProvider(wandered, text_response("+ auth is in src/auth.py", usage=Usage(9, 2)))
    summary = await Summarizer(provider, conversation=CONVERSATION).fold_history(window, cut, material, [])
    assert (summary.changes, summary.usage) == ("+ auth is in src/auth.py", Usage(14, 3))
    fold, standalone = provider.requests
    assert fold.tools == TOOLS and standalone.tools == ()
    assert standalone.messages[0].text.endswith(f"## Material being retired from memory\n{material.strip()}")


async def test_without_the_conversation_or_with_another_model_the_call_is_standalone() -> None:
    window, cut, material = three_questions()
    for summarizer in (
        Summarizer(ScriptedProvider(text_response("(no change)"))),
        Summarizer(ScriptedProvider(text_response("(no change)")), model="other-model", conversation=CONVERSATION),
    ):
        await summarizer.fold_history(window, cut, material, [])
        [request] = summarizer.provider.requests  # type: ignore[attr-defined]
        assert request.system[0].text.startswith(NEUTRAL_SUMMARY_SYSTEM_PROMPT[:40]) and request.tools == ()


def test_a_fold_points_at_the_facts_the_frozen_block_numbers_and_sends_them_when_they_changed() -> None:
    window, _, _ = three_questions()
    facts = "a.py holds A\nsrc/auth.py issues tokens\nb.py holds B"
    window.ledger.set_from_summary(facts, {"src/auth.py": sha("auth")})
    window.freeze()
    assert window.ledger_for_fold() == FROZEN_LEDGER_POINTER
    window.ledger.mark_stale("src/auth.py")  # after the freeze: the frozen block still shows it fresh
    assert window.ledger_for_fold() == f"{FROZEN_LEDGER_POINTER}\n{NEWLY_STALE_FACTS} 2"
    window.freeze()  # now the frozen block shows it stale
    assert window.ledger_for_fold() == FROZEN_LEDGER_POINTER
    window.ledger.apply_summary("= 2", {"src/auth.py": sha("auth")}, 2048)  # confirmed since: fresh again
    assert (
        window.ledger_for_fold()
        == f"{LEDGER_RENUMBERED}\n1. a.py holds A\n2. src/auth.py issues tokens\n3. b.py holds B"
    )
    window.ledger.set_from_summary("a.py holds A\nc.py holds C", {})  # other facts than the frozen block's
    assert window.ledger_for_fold() == f"{LEDGER_RENUMBERED}\n1. a.py holds A\n2. c.py holds C"


async def test_a_fold_is_sent_only_while_the_provider_still_caches_what_it_repeats() -> None:
    window, cut, material = three_questions(second_sent_at=NOW - 299)
    assert await first_request(window, cut, material) == "fold"
    window, cut, material = three_questions(second_sent_at=NOW - 301)  # older than the cache lifetime
    assert await first_request(window, cut, material) == "standalone"
    window, cut, material = three_questions()
    window.freeze()  # a new frozen block: the prompt that question was sent with is not the one a fold would send
    assert await first_request(window, cut, material) == "standalone"
    window, cut, material = three_questions(second_sent_at=NOW - 10)
    window.history[cut] = replace(window.history[cut], sent=None)  # restored from disk: its age is unknown
    assert await first_request(window, cut, material) == "standalone"


async def test_a_fold_is_sent_only_after_the_same_history_that_question_was_sent_after() -> None:
    window, cut, material = three_questions()
    window.history.insert(1, Turn("tool", Message("assistant", (TextPart("a kept tool turn"),))))
    del window.history[1]  # the same turns again: the fold repeats the prompt as sent
    assert await first_request(window, cut, material) == "fold"
    window.history[0:0] = [Turn("tool", Message("assistant", (TextPart("x"),)))]  # shifted: not the prompt sent
    assert await first_request(window, cut + 1, material) == "standalone"
    window, cut, material = three_questions()
    twin, _, _ = three_questions()
    twin.append_exchanges(window.history[cut : cut + 2], window.files)  # replayed after another history (a rebase)
    assert twin.history[-2].question == "who calls it?" and twin.history[-2].sent is None
    assert window.history[cut].sent is not None


async def test_a_fold_is_sent_only_when_reading_the_cached_prompt_costs_less_than_the_material() -> None:
    window, cut, material = three_questions()
    assert await first_request(window, cut, material) == "fold"
    assert await first_request(window, cut, "Q: short\nA: short") == "standalone"  # too little to retire
    small_discount = replace(CONVERSATION, read_share=0.9)  # a cache that saves little
    assert await first_request(window, cut, material, small_discount) == "standalone"
    window.observe("big.py", "VALUE = 1\n" * 20_000, sha("big"))  # a held file makes the frozen block large
    window.freeze()
    window.history[cut] = replace(window.history[cut], sent=Sent(window.epoch, cut, NOW - 10))
    assert await first_request(window, cut, material) == "standalone"
