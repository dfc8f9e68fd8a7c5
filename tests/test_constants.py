"""The defaults and knobs other code relies on are consistent with each other, with the provider
profiles and prices, and with the plugin's manifest."""

from __future__ import annotations

import json
from pathlib import Path

from live_memory import constants as C
from live_memory.fs.globs import compile_path_glob
from live_memory.providers.pricing import PRICES
from live_memory.providers.profiles import PROFILES

REPO = Path(__file__).resolve().parents[1]


def test_a_question_deadline_leaves_room_for_the_final_answer_tools_and_progress() -> None:
    assert C.MIN_TIMEOUT_S < C.DEFAULT_TIMEOUT_S <= C.MAX_TIMEOUT_S
    assert C.FINAL_ANSWER_RESERVE_S < C.DEFAULT_TIMEOUT_S / 2
    assert C.TOOL_SUBPROCESS_TIMEOUT_S < C.DEFAULT_TIMEOUT_S  # one tool call cannot eat a whole question
    assert C.PROGRESS_INTERVAL_S < C.DEFAULT_TIMEOUT_S / 2  # a client sees several heartbeats per answer
    assert 0 < C.ADMISSION_WAIT_SHARE < 1 and 0 < C.BACKGROUND_STOP_SHARE < 1


def test_provider_calls_connect_sooner_than_they_answer_and_backoff_is_bounded() -> None:
    assert C.PROVIDER_CONNECT_TIMEOUT_S < C.PROVIDER_REQUEST_TIMEOUT_S
    assert 0 < C.RETRY_BASE_DELAY_S <= C.RETRY_MAX_DELAY_S < C.DEFAULT_TIMEOUT_S


def test_answer_token_bounds_contain_the_default_and_the_summary_budget() -> None:
    assert C.MIN_ANSWER_TOKENS <= C.DEFAULT_MAX_ANSWER_TOKENS <= C.MAX_ANSWER_TOKENS
    assert C.MIN_ANSWER_TOKENS <= C.SUMMARY_MAX_TOKENS <= C.MAX_ANSWER_TOKENS


def test_compaction_shrinks_to_a_floor_below_its_threshold() -> None:
    assert 0 < C.COMPACTION_FLOOR < C.COMPACTION_THRESHOLD < 1
    assert 0 < C.DIRECTORY_TREE_SHARE < C.COMPACTION_FLOOR  # the tree never fills the window on its own
    assert C.CALIBRATION_MIN_RATIO <= 1.0 <= C.CALIBRATION_MAX_RATIO
    assert 0 < C.CALIBRATION_EMA_ALPHA <= 1


def test_a_cache_read_weighs_what_the_price_tables_charge_for_it() -> None:
    claude = [price for needle, price in PRICES if needle.startswith("claude-")]
    assert all(abs(price.cache_read / price.input - C.CACHE_READ_WEIGHT) < 1e-9 for price in claude)


def test_keep_warm_looks_more_often_than_any_profile_pings_and_gives_up_after_idling() -> None:
    shortest = min(profile.keep_warm_interval_s for profile in PROFILES.values())
    assert shortest / 4 > C.KEEP_WARM_CHECK_S  # a ping is never late by more than a quarter of its interval
    assert shortest < C.KEEP_WARM_MAX_IDLE_S


def test_the_client_waits_for_health_longer_than_the_server_probes_its_workers() -> None:
    """Otherwise a busy but healthy server would look like a foreign program to the command line."""
    assert C.HEALTH_PROBE_TIMEOUT_S > C.HEALTH_WORKER_PROBE_S


def test_connection_bounds_leave_room_for_a_health_check() -> None:
    assert 1 < C.MIN_CONNECTIONS <= C.MAX_CONNECTIONS
    assert C.KEEP_ALIVE_TIMEOUT_S <= C.REQUEST_HEADER_TIMEOUT_S
    assert C.MAX_REQUEST_HEAD_BYTES >= 8 * 1024  # long Authorization and MCP headers still fit


def test_tool_defaults_sit_within_their_caps() -> None:
    assert C.GREP_DEFAULT_HEAD_LIMIT <= C.GREP_MAX_HEAD_LIMIT
    assert max(C.GLOB_DEFAULT_LIMIT, C.FIND_PATHS_DEFAULT_LIMIT) <= C.LISTING_MAX_LIMIT
    assert C.GIT_SEARCH_DEFAULT_COUNT <= C.GIT_SEARCH_MAX_COUNT
    assert min(C.GREP_MAX_RAW_BYTES, C.GIT_MAX_RAW_BYTES, C.LISTING_MAX_RAW_BYTES) > C.MAX_TOOL_OUTPUT_BYTES
    assert C.BINARY_SNIFF_BYTES <= C.HASH_CHUNK_BYTES <= C.TOOL_HASH_MAX_BYTES
    assert C.PASSIVE_MAX_FILE_BYTES <= C.PRELOAD_MAX_TOTAL_BYTES


def test_the_latency_histogram_and_recent_questions_are_bounded_sensibly() -> None:
    assert list(C.LATENCY_BUCKETS_S) == sorted(set(C.LATENCY_BUCKETS_S))
    assert C.RECENT_QUESTIONS_SHOWN <= C.RECENT_QUESTIONS_KEPT
    assert C.LOG_REPEAT_BURST >= 1 and C.LOG_REPEAT_WINDOW_S > 0


def test_the_secret_globs_are_distinct_valid_globs_covering_the_usual_suspects() -> None:
    assert len(set(C.DEFAULT_SECRET_GLOBS)) == len(C.DEFAULT_SECRET_GLOBS)
    globs = [compile_path_glob(glob) for glob in C.DEFAULT_SECRET_GLOBS]
    for path in (".env", "config/.env.production", "certs/server.pem", "home/.ssh/id_ed25519", ".aws/credentials"):
        assert any(glob.matches(path) for glob in globs), path


def test_the_plugin_sends_the_project_header_the_server_reads_and_outwaits_a_question() -> None:
    server = json.loads((REPO / ".mcp.json").read_text())["mcpServers"][C.SERVER_NAME]
    assert {name.lower() for name in server["headers"]} >= {C.PROJECT_HEADER}
    assert server["url"].endswith(C.MCP_PATH)
    assert server["timeout"] / 1000 > C.DEFAULT_TIMEOUT_S + C.FINAL_ANSWER_RESERVE_S
