"""What the history keeps of an answer: its lead and the citations of the rest; the agent gets it whole."""

from __future__ import annotations

from pathlib import Path

from live_memory.core import prompts
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.kept_answer import kept_answer
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.engine.test_agent_loop import loop_for

LEAD = "`Cache` is in app/cache.py:10-40; `evict` in app/cache.py:42-60."
DETAIL = [
    "- It keeps entries in an OrderedDict and moves a hit to the end (app/cache.py:20-24).",
    "- `evict` drops the oldest entry when full; the size check is app/cache.py:44-47.",
    "- Callers: app/api.py:12-15 and app/cache.py:42-60 again.",
]
ANSWER = "\n".join([LEAD, *DETAIL])


def test_an_answer_that_fits_is_kept_whole() -> None:
    assert kept_answer(ANSWER, len(ANSWER)) == ANSWER


def test_zero_keeps_every_answer_whole() -> None:
    assert kept_answer(ANSWER, 0) == ANSWER


def test_a_long_answer_keeps_its_first_line_and_names_what_the_rest_cited_once_each() -> None:
    kept = kept_answer(ANSWER, len(LEAD) + 10)
    lead, note = kept.split("\n")
    assert lead == LEAD
    # The rest's citations, in order, each once, without those the lead already names.
    assert note == prompts.answer_rest_note(["app/cache.py:20-24", "app/cache.py:44-47", "app/api.py:12-15"])
    assert "OrderedDict" not in kept


def test_the_lead_takes_whole_lines_up_to_the_limit() -> None:
    limit = len(LEAD) + 1 + len(DETAIL[0])
    kept = kept_answer(ANSWER, limit)
    assert kept.split("\n")[:2] == [LEAD, DETAIL[0]]
    assert "size check" not in kept


def test_the_lead_stops_at_the_first_paragraph_break() -> None:
    answer = f"{LEAD}\n\n{DETAIL[0]}"
    assert kept_answer(answer, len(answer) - 1) == f"{LEAD}\n{prompts.answer_rest_note(['app/cache.py:20-24'])}"


def test_a_single_line_longer_than_the_limit_is_kept_whole() -> None:
    assert kept_answer(LEAD, 10) == LEAD


def test_a_rest_without_citations_says_only_that_it_is_not_kept() -> None:
    answer = f"{LEAD}\nThe rest explains the design at length without naming a line."
    assert kept_answer(answer, len(LEAD)) == f"{LEAD}\n{prompts.answer_rest_note([])}"


async def test_the_agent_gets_the_whole_answer_and_the_next_question_sees_only_its_lead(tmp_path: Path) -> None:
    provider = ScriptedProvider(text_response(ANSWER), text_response("The same entry."))
    loop = await loop_for(tmp_path, provider, answer_chars=len(LEAD))
    window = ContextWindow(budget_tokens=100_000)
    first = await loop.answer(window, "How does the cache evict?")
    await loop.answer(window, "And where are hits moved?")
    assert first.answer == ANSWER
    earlier = provider.requests[1].messages[1].text
    assert earlier.startswith(LEAD) and "app/cache.py:20-24" in earlier and "OrderedDict" not in earlier
    assert window.history[-1].message.text == "The same entry."  # a short answer stays as it was
