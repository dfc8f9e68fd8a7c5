"""The hot set: which files keep their bytes in the window, chosen by use.

A held file costs a cache read of its tokens on every request; a file that is not held costs, each time a
question needs it again, a tool round (the cached prompt read once more) and its bytes sent afresh. So a
file is worth holding while its expected re-reads cost more than holding it. Both sides are priced from
what the workspace has seen:

- use: every read by the memory's model, every read or edit an agent teed in, every answer citing it;
- the rate of use: its uses again over the questions since the first one, with a prior worth
  `prior_questions` questions at the workspace's own rate (how often a file used once was used again, over all
  its files: where work keeps returning to the same files a file just read is likely needed again), halved for
  every `half_life` questions since its last use;
- the cost: the model's cache-read and cache-write shares of its input price, the prompt an extra round
  reads, and how many requests a question sends (measured).

A file enters the hot set when holding it until the next compaction costs less than its expected re-reads
over that time, counting the one cache write of its bytes; it enters as a delta (never a prefix rewrite).
At a compaction the set is re-chosen by the same rule under its token budget, best value per token first.
This module only decides; `ContextWindow` holds the bytes and keeps the counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from live_memory.constants import (
    HOT_SET_HALF_LIFE_QUESTIONS,
    HOT_SET_HORIZON_QUESTIONS,
    HOT_SET_PRIOR_QUESTIONS,
    HOT_SET_REQUESTS_PER_QUESTION,
    WATCH_MAX_DIRECTORIES,
)
from live_memory.settings.config import Settings
from live_memory.settings.prices import cache_read_share, cache_write_share


class FileUse(NamedTuple):
    """How often a file was used, counted in questions asked of the workspace (a tuple: one is built per file
    event, and a tuple builds several times faster than a frozen dataclass)."""

    uses: int = 0
    first: int = 0  # questions asked before its first use
    last: int = 0  # questions asked before its last use

    def used(self, now: int) -> FileUse:
        if self.uses == 0:
            return FileUse(1, now, now)
        return FileUse(self.uses + 1, self.first, now)


@dataclass(frozen=True)
class HoldCosts:
    """Prices as shares of an uncached input token, and the prompt an extra tool round reads again."""

    read_share: float  # a cached input token
    write_share: float  # a token written to the cache (Anthropic: 1.25; an implicit cache: 1.0)
    round_tokens: int  # the prompt a re-read's extra round reads from the cache
    requests_per_question: float = HOT_SET_REQUESTS_PER_QUESTION  # requests that carry a held file, per question
    returns: Returns | None = None  # how the workspace's files came back (`returns`); None: no record


@dataclass(frozen=True)
class HotSetPolicy:
    budget_tokens: int
    prior_questions: float = HOT_SET_PRIOR_QUESTIONS
    half_life: float = HOT_SET_HALF_LIFE_QUESTIONS
    horizon: float = HOT_SET_HORIZON_QUESTIONS  # questions a file entering the set is expected to stay

    def rate(self, use: FileUse, now: int, returns: Returns | None = None) -> float:
        """Expected uses per question from here on (`returns`: how the workspace's files came back)."""
        if use.uses == 0:
            return 0.0
        files, questions = returns or (0.0, 0.0)
        pooled = (files + 1) / (questions + self.prior_questions)  # with no record: one return in prior_questions
        rate = (use.uses - 1 + pooled * self.prior_questions) / (max(0, now - use.first) + self.prior_questions)
        decay: float = 0.5 ** (max(0, now - use.last) / self.half_life)
        return rate * decay

    def value(self, tokens: int, use: FileUse, now: int, costs: HoldCosts) -> float:
        """What holding the file saves per question, in uncached input tokens (negative: it costs more)."""
        reread = tokens * costs.write_share + tokens * costs.read_share + costs.round_tokens * costs.read_share
        hold = tokens * costs.read_share * costs.requests_per_question
        return self.rate(use, now, costs.returns) * reread - hold

    def admits(self, tokens: int, use: FileUse, now: int, costs: HoldCosts, held_tokens: int) -> bool:
        """Whether a file not held should enter now: it fits the budget, and over the horizon it saves more
        than the one cache write of its bytes."""
        if tokens <= 0 or held_tokens + tokens > self.budget_tokens:
            return False
        return self.value(tokens, use, now, costs) * self.horizon > tokens * costs.write_share

    def choose(
        self, items: Mapping[str, tuple[str, int]], uses: Mapping[str, FileUse], now: int, costs: HoldCosts
    ) -> list[str]:
        """The keys to hold of `items` (key -> (the file it is of, tokens)): those worth holding, best value
        per token first, while they fit the budget."""
        worth = [
            (self.value(tokens, uses.get(path, FileUse()), now, costs) / tokens, key)
            for key, (path, tokens) in items.items()
            if tokens > 0
        ]
        kept: list[str] = []
        total = 0
        for density, key in sorted(worth, key=lambda item: (-item[0], item[1])):
            if density <= 0:
                break
            tokens = items[key][1]
            if total + tokens <= self.budget_tokens:
                kept.append(key)
                total += tokens
        return kept


class Returns(NamedTuple):
    """How soon the workspace's files, once used, were used again: the files that came back, and the questions
    each waited (a file that came back, its mean gap between uses; one that has not, the questions since its use).
    Counted per file, not per use: a file used in every question says little of the next file read. The policy
    reads a rate from it with its own prior, one return in `prior_questions`."""

    files: float
    questions: float


def returns(uses: Mapping[str, FileUse], now: int) -> Returns:
    files = questions = 0.0
    for use in uses.values():
        if use.uses > 1:
            files += 1
            questions += (use.last - use.first) / (use.uses - 1)
        else:
            questions += max(0, now - use.first)
    return Returns(files, questions)


def count_uses(uses: dict[str, FileUse], paths: Iterable[str], now: int) -> None:
    """One use of each path (a path named twice in one event counts once)."""
    for path in dict.fromkeys(paths):
        uses[path] = uses.get(path, FileUse()).used(now)


def used_recently(uses: Mapping[str, FileUse], limit: int) -> list[str]:
    """The files used (read by the memory's model, read or edited by the agents), the most recently used
    first, then the most used, at most `limit`."""
    ranked = sorted(uses.items(), key=lambda item: (item[1].last, item[1].uses), reverse=True)
    return [path for path, _ in ranked[:limit]]


def used_directories(uses: Mapping[str, FileUse], limit: int = WATCH_MAX_DIRECTORIES) -> list[str]:
    """The directories of the files used most recently first (`used_recently`), each once, at most `limit`."""
    found = dict.fromkeys(path.rpartition("/")[0] for path in used_recently(uses, limit))
    return list(found)[:limit]


@dataclass(frozen=True)
class HotSet:
    """The hot set as configured for one runtime: the rule, the answering model's prices, the file cap, and what
    it takes in: the files the memory's model read whole (`reads`), the lines answers cite (`cited`)."""

    policy: HotSetPolicy
    read_share: float
    write_share: float
    max_file_bytes: int
    reads: bool = True
    cited: bool = False


def hot_set_of(settings: Settings) -> HotSet | None:
    """The configured hot set: the files read whole with `hold_reads`, the lines cited with `hold_files` "used",
    priced from the answering model; None with neither."""
    cited = settings.hold_files == "used"
    if not (cited or settings.hold_reads):
        return None
    policy = HotSetPolicy(settings.hot_set_tokens)
    return HotSet(
        policy,
        cache_read_share(settings),
        cache_write_share(settings),
        settings.passive_max_file_bytes,
        settings.hold_reads,
        cited,
    )
