"""What the user configures reaches the policy that applies it: each policy is built from the settings by its one
builder (`workspaces/policies.py`, `AdmissionLimits.from_settings`)."""

from __future__ import annotations

from pathlib import Path

from live_memory import constants as C
from live_memory.engine.admission import AdmissionLimits
from live_memory.settings.config import load_settings
from live_memory.workspaces.policies import compaction_policy, loop_limits


def test_the_options_that_shape_compaction_reach_the_compactor_s_policy(tmp_path: Path) -> None:
    env = {
        "LIVE_MEMORY_COMPACTION_THRESHOLD": "0.8",
        "LIVE_MEMORY_COMPACTION_FLOOR": "0.4",
        "LIVE_MEMORY_HISTORY_MAX_TOKENS": "12000",
        "LIVE_MEMORY_HISTORY_FLOOR": "0.3",
        "LIVE_MEMORY_DIRECTORY_TREE_TOKENS": "900",
        "LIVE_MEMORY_HOT_SET_TOKENS": "7000",
    }
    policy = compaction_policy(load_settings(env=env, data_dir=tmp_path))
    assert (policy.threshold, policy.floor, policy.history_max_tokens, policy.history_floor) == (0.8, 0.4, 12000, 0.3)
    assert policy.tree is not None and policy.tree.configured_tokens == 900
    assert policy.hot_set is not None and policy.hot_set.policy.budget_tokens == 7000
    no_hot_set = {"LIVE_MEMORY_HOLD_READS": "false", "LIVE_MEMORY_HOLD_FILES": "none"}
    assert compaction_policy(load_settings(env=no_hot_set, data_dir=tmp_path)).hot_set is None


def test_the_options_that_shape_a_question_reach_its_loop(tmp_path: Path) -> None:
    env = {
        "LIVE_MEMORY_MAX_ITERATIONS": "7",
        "LIVE_MEMORY_PROVIDER_RETRY_BASE_S": "0.5",
        "LIVE_MEMORY_LONG_CACHE": "history",
        "LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD": "false",
        "LIVE_MEMORY_HISTORY_ANSWER_CHARS": "300",
        "LIVE_MEMORY_PRE_READ_TOKENS": "1000",
    }
    settings = load_settings(env=env, data_dir=tmp_path)
    hot_set = compaction_policy(settings).hot_set
    limits = loop_limits(settings, timeout_s=30.0, answer_tokens=900, reserve_s=2.0, hot_set=hot_set)
    assert (limits.timeout_s, limits.answer_tokens, limits.reserve_s, limits.hot_set) == (30.0, 900, 2.0, hot_set)
    assert (limits.max_iterations, limits.retry_base_s, limits.long_cache) == (7, 0.5, "history")
    assert (limits.force_explore_when_cold, limits.answer_chars) == (False, 300)
    assert limits.pre_read_chars == int(1000 * C.CHARS_PER_TOKEN)
    assert limits.context_tokens == settings.model_context_tokens


def test_serial_concurrency_admits_one_question_at_a_time_whatever_the_parallel_limit(tmp_path: Path) -> None:
    env = {"LIVE_MEMORY_MAX_PARALLEL_QUERIES": "3", "LIVE_MEMORY_MAX_WAITING_QUERIES": "5"}
    parallel = AdmissionLimits.from_settings(load_settings(env=env, data_dir=tmp_path))
    assert (parallel.mode, parallel.running_limit, parallel.max_waiting) == ("parallel", 3, 5)
    assert parallel.retry_after_s == C.BUSY_RETRY_AFTER_S
    serial = AdmissionLimits.from_settings(
        load_settings(env={**env, "LIVE_MEMORY_CONCURRENCY": "serial"}, data_dir=tmp_path)
    )
    assert (serial.mode, serial.running_limit, serial.max_waiting) == ("serial", 1, 5)
