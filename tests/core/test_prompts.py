"""The prompt text: byte-stable (it sits in the cached prefix), naming every tool the model has, and
the per-question hint that is never cached."""

from __future__ import annotations

import re

from live_memory.core import prompts
from live_memory.tools import TOOL_SCHEMAS


def test_the_system_prompt_names_every_tool_the_model_can_call() -> None:
    for schema in TOOL_SCHEMAS:
        assert re.search(rf"\b{re.escape(schema['name'])}\b", prompts.SYSTEM_PROMPT), schema["name"]


def test_the_prompt_text_is_byte_stable() -> None:
    """No timestamps, counters or other run-dependent values may reach the cached prefix."""
    constant = [
        prompts.SYSTEM_PROMPT,
        prompts.NEUTRAL_SUMMARY_SYSTEM_PROMPT,
        prompts.COLD_EXPLORE_NUDGE,
        prompts.OBSERVATION_ACK,
    ]
    for text in constant:
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\d\d:\d\d", text)


def test_headings_are_distinct_markdown_headings() -> None:
    headings = [
        prompts.DIRECTORY_TREE_HEADING,
        prompts.LEDGER_HEADING,
        prompts.STALE_LEDGER_HEADING,
        prompts.OBSERVED_HEADING,
        prompts.PRELOADED_HEADING,
        prompts.MANIFEST_HEADING,
        prompts.QUESTION_HEADING,
        prompts.HINT_HEADING,
    ]
    assert all(h.startswith("## ") and "\n" not in h for h in headings)
    assert len(set(headings)) == len(headings)


def test_the_hint_states_the_time_and_length_budgets() -> None:
    hint = prompts.question_hint(time_budget_s=29.6, answer_tokens=1200, recently_modified=[])
    assert hint == (
        "## Budgets\n"
        "- Time: about 30 s, then a best-effort answer is taken.\n"
        "- Answer: at most 1200 tokens, the most important facts first."
    )


def test_the_hint_names_at_most_fifty_recently_modified_files() -> None:
    files = [f"src/f{i}.py" for i in range(53)]
    hint = prompts.question_hint(time_budget_s=60, answer_tokens=800, recently_modified=files)
    last = hint.splitlines()[-1]
    assert last.startswith("- Modified by the agents since you last saw them (re-read before relying on them): ")
    assert "src/f49.py" in last and "src/f50.py" not in last and last.endswith("(+3 more)")
    few = prompts.question_hint(time_budget_s=60, answer_tokens=800, recently_modified=["a.py", "b.py"])
    assert few.splitlines()[-1].endswith(": a.py, b.py")


def test_a_question_block_is_the_heading_and_the_trimmed_question() -> None:
    assert prompts.question_block("\n  where is main?  \n") == "## Question\nwhere is main?"


def test_the_summary_prompt_only_takes_its_output_cap() -> None:
    formatted = prompts.NEUTRAL_SUMMARY_SYSTEM_PROMPT.format(max_tokens=2048)
    assert "well under 2048 tokens" in formatted and "{" not in formatted


def test_the_summary_request_shows_the_ledger_then_the_material() -> None:
    assert prompts.summary_request_text("  - a fact \n", "\nQ: q\nA: a\n") == (
        "## Current ledger\n- a fact\n\n## Material being retired from memory\nQ: q\nA: a"
    )
    assert prompts.summary_request_text("", "m").startswith("## Current ledger\n(empty)\n\n")


def test_the_hint_ends_with_the_definitions_found_under_their_heading_in_order() -> None:
    definitions = [
        "Definitions of 'load' (workspace scan; Read a range to see the code):\nmodels.py:6-7  load (function)",
        "Definitions of 'Card' (symbol index; Read a range to see the code):\nmodels.py:1-3  Card (class)",
    ]
    hint = prompts.question_hint(
        time_budget_s=30, answer_tokens=500, recently_modified=["a.py"], definitions=definitions
    )
    budgets = prompts.question_hint(time_budget_s=30, answer_tokens=500, recently_modified=["a.py"])
    assert hint == "\n".join([budgets, "", prompts.DEFINITIONS_HEADING, *definitions])


def test_without_definitions_the_hint_has_no_definitions_heading() -> None:
    plain = prompts.question_hint(time_budget_s=30, answer_tokens=500, recently_modified=[])
    assert prompts.question_hint(time_budget_s=30, answer_tokens=500, recently_modified=[], definitions=[]) == plain
    assert prompts.DEFINITIONS_HEADING not in plain


def test_the_definitions_heading_is_a_distinct_one_line_markdown_heading() -> None:
    others = [prompts.HINT_HEADING, prompts.QUESTION_HEADING, prompts.MANIFEST_HEADING, prompts.OBSERVED_HEADING]
    assert prompts.DEFINITIONS_HEADING.startswith("## ") and "\n" not in prompts.DEFINITIONS_HEADING
    assert prompts.DEFINITIONS_HEADING not in others


def test_the_system_prompt_sends_the_model_to_find_symbol_for_where_a_name_is_defined() -> None:
    [sentence] = [s for s in prompts.SYSTEM_PROMPT.split("\n- ") if "find_symbol" in s]
    assert "defined" in sentence and "Read" in sentence  # look the name up, then read just those lines
