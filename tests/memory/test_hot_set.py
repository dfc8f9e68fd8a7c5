"""The hot set's rule: which files (and cited lines) are worth holding, priced from how they were used."""

from __future__ import annotations

from pathlib import Path

import pytest

from live_memory.memory.hot_set import FileUse, HoldCosts, HotSetPolicy, count_uses, hot_set_of, used_recently
from live_memory.settings.config import load_settings

ANTHROPIC = HoldCosts(read_share=0.1, write_share=1.25, round_tokens=20_000)  # a 20k-token prompt per extra round
POLICY = HotSetPolicy(budget_tokens=24_000, prior_questions=30.0, half_life=8.0, horizon=10.0)

HOT = FileUse(uses=10, first=0, last=9)  # used in each of the last ten questions
COLD = FileUse(uses=1, first=0, last=0)  # used once, in the first question


def test_a_first_use_starts_the_count_and_later_uses_keep_the_first_question() -> None:
    once = FileUse().used(3)
    assert once == FileUse(1, 3, 3)
    assert once.used(7).used(9) == FileUse(3, 3, 9)


def test_a_path_named_twice_in_one_event_counts_once_and_each_event_counts() -> None:
    uses: dict[str, FileUse] = {}
    count_uses(uses, ["src/a.py", "src/b.py", "src/a.py"], now=2)
    assert uses == {"src/a.py": FileUse(1, 2, 2), "src/b.py": FileUse(1, 2, 2)}
    count_uses(uses, ["src/a.py"], now=5)
    assert uses["src/a.py"] == FileUse(2, 2, 5) and uses["src/b.py"] == FileUse(1, 2, 2)


def test_a_file_never_used_has_no_rate() -> None:
    assert POLICY.rate(FileUse(), now=50) == 0.0


def test_a_file_used_once_just_now_is_rated_as_once_in_the_prior_questions() -> None:
    assert POLICY.rate(FileUse(1, 12, 12), now=12) == pytest.approx(1 / 30)


def test_the_rate_halves_for_every_half_life_of_idle_questions() -> None:
    use = FileUse(uses=4, first=0, last=10)
    assert POLICY.rate(use, now=10) == pytest.approx(4 / 40)
    assert POLICY.rate(use, now=18) == pytest.approx(4 / 48 / 2)
    assert POLICY.rate(use, now=26) == pytest.approx(4 / 56 / 4)


def test_a_count_from_the_future_is_not_a_negative_span() -> None:
    """A window rebased onto fewer questions than a use was counted at: no division by a shrunken span."""
    assert POLICY.rate(FileUse(2, 10, 10), now=5) == pytest.approx(2 / 30)


def test_a_file_used_in_every_recent_question_is_held_and_one_used_once_long_ago_is_not() -> None:
    assert POLICY.value(2000, HOT, 10, ANTHROPIC) > 0
    assert POLICY.admits(2000, HOT, 10, ANTHROPIC, held_tokens=0)
    assert POLICY.value(2000, COLD, 40, ANTHROPIC) < 0
    assert not POLICY.admits(2000, COLD, 40, ANTHROPIC, held_tokens=0)


def test_a_file_in_steady_use_loses_its_place_after_a_few_idle_half_lives() -> None:
    steady = FileUse(uses=10, first=0, last=9)
    assert POLICY.admits(2000, steady, 10, ANTHROPIC, held_tokens=0)
    assert not POLICY.admits(2000, steady, 10 + 4 * 8, ANTHROPIC, held_tokens=0)  # idle 32 questions


def test_a_large_file_does_not_enter_when_the_budget_is_full() -> None:
    assert POLICY.admits(6000, HOT, 10, ANTHROPIC, held_tokens=18_000)  # exactly fills the budget
    assert not POLICY.admits(6001, HOT, 10, ANTHROPIC, held_tokens=18_000)
    assert not POLICY.admits(2000, HOT, 10, ANTHROPIC, held_tokens=23_000)


def test_nothing_empty_enters() -> None:
    assert not POLICY.admits(0, HOT, 10, ANTHROPIC, held_tokens=0)


def test_entering_must_save_more_over_the_horizon_than_the_one_cache_write() -> None:
    """Worth a little per question is not enough when the horizon is short: the write is paid up front."""
    twice = FileUse(uses=2, first=0, last=9)
    worth = POLICY.value(500, twice, 10, ANTHROPIC)
    assert 0 < worth * 10 < 500 * 1.25
    assert not POLICY.admits(500, twice, 10, ANTHROPIC, held_tokens=0)
    long_stay = HotSetPolicy(budget_tokens=24_000, horizon=100.0)
    assert long_stay.admits(500, twice, 10, ANTHROPIC, held_tokens=0)


def test_without_a_cache_discount_holding_never_pays_when_an_extra_round_is_free() -> None:
    """At full price a held file is paid on every request: re-reading it at most once a question is cheaper."""
    no_discount = HoldCosts(read_share=1.0, write_share=1.0, round_tokens=0)
    discounted = HoldCosts(read_share=0.1, write_share=1.25, round_tokens=0)
    every_question = FileUse(uses=100, first=0, last=99)
    for tokens in (50, 2000, 20_000):
        assert POLICY.value(tokens, every_question, 100, no_discount) < 0
        assert not POLICY.admits(tokens, every_question, 100, no_discount, held_tokens=0)
    assert POLICY.admits(2000, every_question, 100, discounted, held_tokens=0)


def test_a_dear_extra_round_makes_holding_pay_even_without_a_cache_discount() -> None:
    """The round a re-read costs reads the whole prompt again: with a large prompt, holding saves it."""
    no_discount = HoldCosts(read_share=1.0, write_share=1.0, round_tokens=0)
    big_prompt = HoldCosts(read_share=1.0, write_share=1.0, round_tokens=50_000)
    assert POLICY.value(500, HOT, 10, no_discount) < 0 < POLICY.value(500, HOT, 10, big_prompt)


def test_choose_takes_the_best_value_per_token_first_and_skips_what_no_longer_fits() -> None:
    """A re-read's extra round costs the same for a small file as for a large one, so of two files used
    alike the smaller is worth more per token; a large file that no longer fits is passed over, and smaller
    ones after it still enter."""
    policy = HotSetPolicy(budget_tokens=5000)
    uses = {"hot.py": HOT, "warm.py": FileUse(uses=6, first=0, last=9), "rare.py": COLD}
    items = {
        "hot.py": ("hot.py", 4500),
        "hot.py:10-20": ("hot.py", 400),  # lines of a file are priced by the file's use
        "warm.py": ("warm.py", 1000),
        "rare.py": ("rare.py", 100),
        "never.py": ("never.py", 100),
    }
    kept = policy.choose(items, uses, 10, ANTHROPIC)
    assert kept == ["hot.py:10-20", "warm.py", "rare.py"]
    assert sum(items[k][1] for k in kept) <= policy.budget_tokens


def test_choose_holds_nothing_whose_value_is_not_positive_and_nothing_empty() -> None:
    uses = {"hot.py": HOT, "cold.py": COLD}
    items = {"cold.py": ("cold.py", 100), "never.py": ("never.py", 100), "empty.py": ("hot.py", 0)}
    assert POLICY.choose(items, uses, 40, ANTHROPIC) == []
    assert POLICY.choose({}, uses, 40, ANTHROPIC) == []


def test_the_hot_set_takes_files_read_whole_by_default_and_cited_lines_only_when_files_are_held_by_use(
    tmp_path: Path,
) -> None:
    default = hot_set_of(load_settings(env={}, data_dir=tmp_path))
    assert default is not None and (default.reads, default.cited) == (True, False)
    off = {"LIVE_MEMORY_HOLD_READS": "false"}
    assert hot_set_of(load_settings(env=off, data_dir=tmp_path)) is None
    for other in ("none", "earned", "all"):
        env = {**off, "LIVE_MEMORY_HOLD_FILES": other}
        assert hot_set_of(load_settings(env=env, data_dir=tmp_path)) is None
    env = {
        **off,
        "LIVE_MEMORY_HOLD_FILES": "used",
        "LIVE_MEMORY_HOT_SET_TOKENS": "5000",
        "LIVE_MEMORY_PASSIVE_MAX_FILE_BYTES": "65536",
    }
    hot = hot_set_of(load_settings(env=env, data_dir=tmp_path))
    assert hot is not None and (hot.reads, hot.cited) == (False, True)
    assert (hot.policy.budget_tokens, hot.read_share, hot.write_share, hot.max_file_bytes) == (5000, 0.1, 1.25, 65536)


def test_the_hot_set_is_priced_from_the_configured_prices_of_the_answering_model(tmp_path: Path) -> None:
    prices = {"LIVE_MEMORY_PRICE_INPUT": "2", "LIVE_MEMORY_PRICE_CACHE_READ": "1", "LIVE_MEMORY_PRICE_CACHE_WRITE": "3"}
    hot = hot_set_of(load_settings(env=prices, data_dir=tmp_path))
    assert hot is not None and (hot.read_share, hot.write_share) == (0.5, 1.5)
    implicit = hot_set_of(load_settings(env={**prices, "LIVE_MEMORY_PROVIDER": "openai"}, data_dir=tmp_path))
    assert implicit is not None and (implicit.read_share, implicit.write_share) == (0.5, 1.0)  # writes cost no more


def test_the_files_used_last_come_first_then_the_most_used_and_no_more_than_asked() -> None:
    uses = {
        "old.py": FileUse(9, 0, 2),
        "new.py": FileUse(1, 7, 7),
        "busy.py": FileUse(4, 1, 7),
        "mid.py": FileUse(2, 3, 5),
    }
    assert used_recently(uses, 10) == ["busy.py", "new.py", "mid.py", "old.py"]
    assert used_recently(uses, 2) == ["busy.py", "new.py"]
    assert used_recently({}, 5) == []
