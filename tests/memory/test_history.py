"""A window's history turns and the running tally over them (server/live_memory/memory/history.py)."""

from __future__ import annotations

from live_memory.core.messages import Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.memory.history import Turn, message_text, tally


def text_turn(kind: str, text: str, cites: tuple[str, ...] = ()) -> Turn:
    role = "assistant" if kind in ("answer", "ack") else "user"
    return Turn(kind, Message(role, (TextPart(text),)), cites=cites)  # type: ignore[arg-type]


def test_the_tally_counts_sizes_questions_and_the_paths_answers_cite() -> None:
    history = [
        text_turn("question", "q" * 40),
        text_turn("answer", "a" * 80, cites=("src/app.py",)),
        text_turn("observation", "o" * 400, cites=("never/counted.py",)),  # not an answer: cites nothing
    ]
    figures = tally(history, 4.0, None)
    assert (figures.all, figures.exchanges, figures.questions) == (10 + 20 + 100, 30, 1)
    assert figures.cited == {"src/app.py"}


def test_a_growing_history_is_read_from_where_the_tally_stopped_and_a_rewritten_one_from_scratch() -> None:
    history = [text_turn("question", "q" * 40), text_turn("answer", "a" * 40, cites=("a.py",))]
    first = tally(history, 4.0, None)
    history.append(text_turn("question", "q" * 40))
    history.append(text_turn("answer", "b" * 40, cites=("b.py",)))
    grown = tally(history, 4.0, first)
    assert (grown.all, grown.questions, grown.cited) == (40, 2, frozenset({"a.py", "b.py"}))

    history[-1] = text_turn("answer", "c" * 400, cites=("c.py",))  # the last turn rewritten in place
    rewritten = tally(history, 4.0, grown)
    assert (rewritten.all, rewritten.cited) == (130, frozenset({"a.py", "c.py"}))
    assert tally(list(history), 4.0, rewritten).all == 130  # another list: counted again, same figures
    assert tally(history, 2.0, rewritten).all == 260  # another rate: counted again at that rate


def test_message_text_joins_text_tool_results_and_tool_calls() -> None:
    message = Message(
        "assistant", (TextPart("see "), ToolUsePart("t1", "Read", {"file_path": "a.py"}), ToolResultPart("t1", "1\tx"))
    )
    assert message_text(message) == "see Read{'file_path': 'a.py'}1\tx"
