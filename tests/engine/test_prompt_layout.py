"""The request a window produces: the four cache breakpoints, the lookback anchor, the hint last, and a
window that is never changed by building a request from it."""

from __future__ import annotations

import pytest

from live_memory.core.messages import Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.engine.prompt_layout import build_prompt, with_breakpoint
from live_memory.memory.context_window import ContextWindow
from live_memory.settings.options import LongCache
from tests.fakes.windows import HINT, ask, sha


def breakpoints(system: tuple[TextPart, ...], messages: tuple[Message, ...]) -> int:
    return sum(p.cache for p in system) + sum(p.cache for m in messages for p in m.parts)


def tool_round() -> list[Message]:
    question = Message("user", (TextPart("## Question\nwhere?"),))
    call = Message("assistant", (ToolUsePart("t1", "Read", {"file_path": "a.py"}),))
    result = Message("user", (ToolResultPart("t1", "A = 1"),))
    return [question, call, result]


def test_prompt_has_fixed_breakpoints_and_the_hint_last() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.set_directory_tree("src/\n  app.py")
    ask(window, "first?", "first answer")
    question = Message("user", (TextPart("## Question\nsecond?"),))
    system, messages = build_prompt(window, [question], hint=HINT)
    assert [p.cache for p in system] == [True, True]
    assert "src/\n  app.py" in system[0].text
    assert [p.text for p in messages[-1].parts] == ["## Question\nsecond?", HINT]  # type: ignore[union-attr]
    assert [p.cache for p in messages[-1].parts] == [True, False]  # bp4 on the question, never on the hint
    assert messages[-2].parts[-1].cache  # bp3 on the last history block
    assert not any(p.cache for m in messages[:-2] for p in m.parts)


def test_a_burst_of_deltas_gets_a_lookback_anchor_on_the_next_question() -> None:
    window = ContextWindow(budget_tokens=100_000)
    ask(window, "q1", "a1")
    ask(window, "q2", "a2")  # its request held q1's exchange: a cache entry ends at history block 1
    for index in range(12):  # 24 new blocks: further than a provider's 20-block lookback
        window.observe(f"f{index}.py", f"x = {index}\n", sha(str(index)))
        window.sync_deltas()
    question = Message("user", (TextPart("## Question\nq3"),))
    _, messages = build_prompt(window, [question], hint=HINT, first_of_question=True)
    marked = [i for i, m in enumerate(messages) if any(p.cache for p in m.parts)]
    assert marked == [2, len(messages) - 2]  # the end of q2's request (its question), and bp3
    _, again = build_prompt(window, [question], hint=HINT, first_of_question=False)
    marked = [i for i, m in enumerate(again) if any(p.cache for p in m.parts)]
    assert marked == [len(again) - 2, len(again) - 1]  # later iterations: bp3 and the moving bp4


def test_a_few_new_blocks_need_no_anchor() -> None:
    window = ContextWindow(budget_tokens=100_000)
    ask(window, "q1", "a1")
    ask(window, "q2", "a2")
    window.observe("f.py", "x = 1\n", sha("f"))
    window.sync_deltas()
    _, messages = build_prompt(window, [Message("user", (TextPart("## Question\nq3"),))], first_of_question=True)
    marked = [i for i, m in enumerate(messages) if any(p.cache for p in m.parts)]
    assert marked == [len(messages) - 2, len(messages) - 1]


def test_building_a_request_never_changes_what_the_window_holds() -> None:
    window = ContextWindow(budget_tokens=10_000)
    ask(window, "q1", "a1")
    before = [t.message for t in window.history]
    tail = tool_round()
    build_prompt(window, tail, hint=HINT, first_of_question=True)
    assert [t.message for t in window.history] == before
    assert not any(p.cache for t in window.history for p in t.message.parts)  # only copies were flagged
    assert tail == tool_round()  # nor the caller's transcript


def test_an_unfrozen_window_is_frozen_once_by_its_first_request() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.observe("a.py", "A = 1\n", sha("a"))
    system, _ = build_prompt(window, [])
    assert window.frozen_volatile is not None and system[1].text == window.frozen_volatile
    assert "A = 1" in system[1].text and window.epoch == 1
    build_prompt(window, [])
    assert window.epoch == 1


def test_the_request_is_system_then_history_then_the_questions_transcript() -> None:
    window = ContextWindow(budget_tokens=10_000)
    ask(window, "q1", "a1")
    tail = tool_round()
    system, messages = build_prompt(window, tail)
    assert system[0].text == window.stable_prefix
    assert [m.text for m in messages[:2]] == ["## Question\nq1", "a1"]
    assert [m.role for m in messages[2:]] == ["user", "assistant", "user"]
    assert isinstance(messages[-1].parts[0], ToolResultPart) and messages[-1].parts[0].cache  # bp4 moves along


def test_after_reads_the_newest_results_are_sent_but_bp4_stays_one_message_back() -> None:
    window = ContextWindow(budget_tokens=10_000)
    ask(window, "q1", "a1")
    _, messages = build_prompt(window, tool_round(), hint=HINT, lag_tail=True)
    assert messages[-2].parts[-1].cache  # on the Read call
    assert [p.cache for p in messages[-1].parts] == [False, False]  # the result, then the hint
    _, single = build_prompt(window, tool_round()[:1], lag_tail=True)
    assert single[-1].parts[-1].cache  # a lone question has nothing earlier to lag to


def test_a_keep_warm_ping_marks_no_breakpoint_on_its_throwaway_turn() -> None:
    window = ContextWindow(budget_tokens=10_000)
    ask(window, "q1", "a1")
    system, messages = build_prompt(window, [Message("user", (TextPart("ping"),))], mark_tail=False)
    assert not any(p.cache for p in messages[-1].parts) and messages[-2].parts[-1].cache
    assert breakpoints(system, messages) == 3


def test_no_request_ever_carries_more_than_four_breakpoints() -> None:
    window = ContextWindow(budget_tokens=100_000)
    for index in range(15):
        ask(window, f"q{index}", f"a{index}")
        window.observe(f"f{index}.py", f"x = {index}\n", sha(str(index)))
        window.sync_deltas()
        for first in (True, False):
            for lag in (True, False):
                system, messages = build_prompt(window, tool_round(), hint=HINT, first_of_question=first, lag_tail=lag)
                assert breakpoints(system, messages) <= 4  # the Anthropic limit per request


def test_with_breakpoint_flags_only_the_last_part_of_a_copy() -> None:
    message = Message("user", (TextPart("a"), TextPart("b")))
    marked = with_breakpoint(message)
    assert [p.cache for p in marked.parts] == [False, True] and [p.cache for p in message.parts] == [False, False]
    empty = Message("assistant", ())
    assert with_breakpoint(empty) is empty


@pytest.mark.parametrize(
    ("scope", "prefix_long", "history_long"),
    [("off", False, False), ("prefix", True, False), ("history", True, True)],
)
def test_long_cache_marks_the_prefix_and_history_breakpoints_but_never_the_questions_tail(
    scope: LongCache, prefix_long: bool, history_long: bool
) -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.set_directory_tree("src/\n  app.py")
    ask(window, "first?", "first answer")
    question = Message("user", (TextPart("## Question\nsecond?"),))
    system, messages = build_prompt(window, [question], hint="## Budgets", long_cache=scope)
    assert [(p.cache, p.long_cache) for p in system] == [(True, prefix_long)] * 2
    history_bp = messages[-2].parts[-1]
    assert history_bp.cache and history_bp.long_cache is history_long
    tail_bp = messages[-1].parts[0]
    assert tail_bp.cache and not tail_bp.long_cache  # long-lived breakpoints must come before short ones
    assert not any(p.long_cache and not p.cache for m in messages for p in m.parts)
