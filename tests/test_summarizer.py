"""The neutral summarizer: one model call that merges retired material into the ledger, fed nothing but
the ledger and that material, with its output capped."""

from __future__ import annotations

import pytest

from live_memory.constants import MAX_TRANSCRIPT_CHARS, SUMMARY_MAX_TOKENS
from live_memory.errors import OverloadedError
from live_memory.prompts import NEUTRAL_SUMMARY_SYSTEM_PROMPT
from live_memory.records import Usage
from live_memory.summarizer import Summarizer
from tests.fakes.scripted_provider import ScriptedProvider, text_response


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
    assert "## Question" not in str(request) and "Budgets for this question" not in str(request)
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
