"""Provider profiles: the endpoint knowledge every other module reads (protocol, cache style,
default model, context size, key variables, keep-warm interval)."""

from __future__ import annotations

import pytest

from live_memory.providers.profiles import (
    MODEL_CONTEXT_TOKENS,
    PROFILES,
    context_tokens_for,
    min_cacheable_tokens_for,
)

ANTHROPIC_CACHE_TTL_S = 300.0  # the default 5-minute cache lifetime a keep-warm ping must beat


def test_each_profile_is_filed_under_its_own_name() -> None:
    assert list(PROFILES) == ["anthropic", "openai", "deepseek", "openrouter", "ollama", "gateway"]
    assert all(name == profile.name for name, profile in PROFILES.items())


def test_anthropic_protocol_profiles_use_explicit_breakpoints_and_openai_ones_implicit_caching() -> None:
    for profile in PROFILES.values():
        expected = "explicit" if profile.protocol == "anthropic" else "implicit"
        assert profile.cache_style == expected, profile.name


def test_keep_warm_pings_come_before_a_five_minute_cache_expires() -> None:
    for name in ("anthropic", "openai", "openrouter", "gateway"):
        assert 0 < PROFILES[name].keep_warm_interval_s < ANTHROPIC_CACHE_TTL_S, name
    # DeepSeek's disk cache and a local server's cache live for hours: pinging every few minutes wastes money
    assert PROFILES["deepseek"].keep_warm_interval_s >= 3600
    assert PROFILES["ollama"].keep_warm_interval_s >= 3600


def test_only_the_local_server_works_without_a_key() -> None:
    assert [p.name for p in PROFILES.values() if not p.needs_key] == ["ollama"]
    assert PROFILES["ollama"].key_envs == ()
    assert PROFILES["ollama"].base_url.startswith("http://127.0.0.1:")


def test_every_hosted_profile_has_an_https_endpoint_except_the_gateway_which_must_be_configured() -> None:
    for profile in PROFILES.values():
        if profile.name == "gateway":
            assert profile.base_url == ""
        elif profile.name != "ollama":
            assert profile.base_url.startswith("https://"), profile.name


def test_only_openai_routes_by_the_workspace_cache_key() -> None:
    assert [p.name for p in PROFILES.values() if p.routes_by_cache_key] == ["openai"]


def test_every_profile_describes_itself_for_the_help_and_doctor_output() -> None:
    assert all(profile.description for profile in PROFILES.values())


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-sonnet-4-6", 1_000_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("anthropic/claude-haiku-4.5", 200_000),
        ("gpt-4.1-mini", 1_047_576),
        ("GPT-5-mini", 272_000),
        ("deepseek-flash", 1_000_000),
    ],
)
def test_well_known_models_report_their_own_context_size(model: str, tokens: int) -> None:
    assert context_tokens_for(model, PROFILES["ollama"]) == tokens


def test_an_unknown_model_falls_back_to_its_profiles_context_size() -> None:
    assert context_tokens_for("qwen3-coder", PROFILES["ollama"]) == 128_000
    assert context_tokens_for("qwen3-coder", PROFILES["deepseek"]) == 1_000_000


def test_each_profiles_default_model_resolves_to_the_profiles_own_context_size() -> None:
    for profile in PROFILES.values():
        assert context_tokens_for(profile.default_model, profile) == profile.context_tokens, profile.name


def test_specific_claude_rows_come_before_the_generic_claude_row() -> None:
    needles = [needle for needle, _ in MODEL_CONTEXT_TOKENS]
    generic = needles.index("claude-")
    assert all(n.startswith("claude-") for n in needles[:generic])
    assert not any(n.startswith("claude-") for n in needles[generic + 1 :])


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-haiku-4-5-20251001", 4_096),
        ("anthropic/claude-haiku-4.5", 4_096),
        ("claude-opus-4-5", 4_096),
        ("claude-opus-4-7", 2_048),
        ("anthropic/claude-opus-4.6", 4_096),
        ("claude-3-haiku-20240307", 2_048),
        ("gemini-2.5-flash", 2_048),
        ("claude-opus-4-1", 1_024),
        ("claude-sonnet-4-5", 1_024),
        ("gpt-5-mini", 1_024),
        ("qwen3-coder", 1_024),
    ],
)
def test_each_model_has_the_shortest_prefix_its_provider_caches(model: str, tokens: int) -> None:
    assert min_cacheable_tokens_for(model) == tokens
