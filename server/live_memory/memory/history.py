"""A window's history: its turns, and one running tally over them.

Between compactions the history only grows, and the window asks about it several times per question
(its size) and once per file event (which files its answers cite): the tally reads only the turns
added since it was last asked, and starts over when the history is replaced or rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from live_memory.core.messages import Message, TextPart, ToolResultPart
from live_memory.core.records import estimate_tokens

EXCHANGE_KINDS = ("question", "tool", "answer")  # what a re-freeze keeps (deltas fold into file contexts)
# "read": a question's tool rounds kept because they hold the bytes of a file the window now holds (hot_set.py):
# like a delta, not counted in the Q&A history's size and dropped at a re-freeze (the frozen block shows the file).
TurnKind = Literal["question", "tool", "answer", "observation", "ack", "read"]


@dataclass(frozen=True)
class Turn:
    kind: TurnKind
    message: Message
    question: str = ""  # kind="question": the raw question (kept out of summaries of recent turns)
    cites: tuple[str, ...] = ()  # kind="answer": files the answer was grounded in
    sent: Sent | None = field(default=None, compare=False)  # kind="question": see `Sent`


@dataclass(frozen=True)
class Sent:
    """How a question was first sent, so a fold can tell whether the provider still caches the prompt up to
    it. Not persisted (after a restart the age is unknown), and cleared when the turn is replayed elsewhere."""

    epoch: int  # the window's epoch: which frozen block it was sent with
    position: int  # its index in the history it was sent after
    at: float  # monotonic time


@dataclass(frozen=True)
class HistoryTally:
    """Figures over the first `count` turns of the `history` list: estimated tokens (before calibration)
    of all of them and of the exchanges, the questions, and the paths the answers cite."""

    history: list[Turn]
    chars_per_token: float
    count: int = 0
    last: Turn | None = None  # the last turn read: an in-place rewrite shows as a different object
    all: int = 0
    exchanges: int = 0  # question, tool and answer turns only
    questions: int = 0  # question turns (Q&A pairs)
    cited: frozenset[str] = frozenset()

    def covers(self, history: list[Turn], chars_per_token: float) -> bool:
        """Whether this still describes the start of `history` (same list, nothing before `count` replaced,
        measured at the same rate)."""
        if history is not self.history or len(history) < self.count or chars_per_token != self.chars_per_token:
            return False
        return self.count == 0 or history[self.count - 1] is self.last

    def extended(self) -> HistoryTally:
        """This tally brought up to the end of its history."""
        history = self.history
        if len(history) == self.count:
            return self
        total, exchanges, questions = self.all, self.exchanges, self.questions
        new: set[str] = set()
        for turn in history[self.count :]:
            size = estimate_tokens(message_text(turn.message), self.chars_per_token)
            total += size
            if turn.kind in EXCHANGE_KINDS:
                exchanges += size
            questions += turn.kind == "question"
            if turn.kind == "answer":
                new.update(turn.cites)
        cited = self.cited | new if new - self.cited else self.cited  # no copy unless a path is new
        count, last = len(history), history[-1]
        return HistoryTally(history, self.chars_per_token, count, last, total, exchanges, questions, cited)


def tally(history: list[Turn], chars_per_token: float, previous: HistoryTally | None) -> HistoryTally:
    """The tally of the whole `history`, from `previous` when it still describes its start."""
    start = previous if previous is not None and previous.covers(history, chars_per_token) else None
    return (start or HistoryTally(history, chars_per_token)).extended()


def message_text(message: Message) -> str:
    chunks: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            chunks.append(part.text)
        elif isinstance(part, ToolResultPart):
            chunks.append(part.content)
        else:
            chunks.append(part.name + str(dict(part.input)))
    return "".join(chunks)
