"""The packaged provider data file: found without a wheel, shipped in one, and the only copy the service, the
fake provider and the benchmarks read."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from bench import bill_cache, prefix_cache

from live_memory.constants import CACHE_LONG_TTL_S, CACHE_TTL_S
from live_memory.providers import catalog
from live_memory.providers.pricing import PRICES, price_for
from live_memory.providers.profiles import EXPLICIT_CACHE, PROFILES, min_cacheable_tokens_for
from live_memory.testing import llm_server
from live_memory.testing.prompt_cache import PromptCache

PACKAGE = Path(catalog.__file__).resolve().parents[1]
SOURCE_ROOT = PACKAGE.parent
REPO = SOURCE_ROOT.parent


def test_the_data_file_is_read_from_the_package_itself() -> None:
    found = Path(str(catalog.data_file()))
    assert found == PACKAGE / "data" / "providers.json"
    assert found.is_file()


def test_a_plain_source_tree_finds_the_data_file_without_an_install_or_site_packages(tmp_path: Path) -> None:
    """`-S`: no site-packages, so no wheel and no editable install; only the source tree on the path."""
    code = "from live_memory.providers import pricing, profiles; print(len(pricing.PRICES), len(profiles.PROFILES))"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SOURCE_ROOT)}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(PRICES)), str(len(PROFILES))]


def test_the_wheel_ships_the_data_file_as_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["live_memory"]
    relative = "/".join(catalog.DATA_FILE)
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), patterns


def test_the_file_is_read_once() -> None:
    assert catalog.provider_data() is catalog.provider_data()


@pytest.mark.parametrize("name", sorted(bill_cache.CACHE_MODEL))
def test_the_bench_prices_its_bills_with_the_services_rows(name: str) -> None:
    assert bill_cache.PRICES[name] is price_for(bill_cache.CACHE_MODEL[name])


def test_the_fake_and_the_bench_take_the_cache_rules_from_the_services_data() -> None:
    assert EXPLICIT_CACHE.max_breakpoints == llm_server.MAX_CACHE_BREAKPOINTS
    assert EXPLICIT_CACHE.ttl_s == bill_cache.TTL_S
    assert EXPLICIT_CACHE.lookback_blocks == prefix_cache.LOOKBACK_BLOCKS


@pytest.mark.parametrize(
    "model", ["claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-7", "claude-opus-5", "claude-3-5-haiku"]
)
def test_the_simulated_minimum_cacheable_prefix_is_the_services(model: str) -> None:
    assert PromptCache("anthropic").min_tokens(model) == min_cacheable_tokens_for(model)


def test_the_services_own_cache_lifetimes_are_the_providers() -> None:
    """constants.py keeps the lifetimes the engine plans with; they must be the ones the data file states."""
    assert (EXPLICIT_CACHE.ttl_s, EXPLICIT_CACHE.long_ttl_s) == (CACHE_TTL_S, CACHE_LONG_TTL_S)


def test_every_profile_row_has_the_types_its_fields_declare() -> None:
    for profile in PROFILES.values():
        assert profile.protocol in ("anthropic", "openai"), profile.name
        assert profile.cache_style in ("explicit", "implicit", "none"), profile.name
        assert isinstance(profile.context_tokens, int) and profile.context_tokens > 0, profile.name
        assert isinstance(profile.keep_warm_interval_s, float), profile.name
        assert isinstance(profile.key_envs, tuple) and all(isinstance(k, str) for k in profile.key_envs)
        assert profile.base_url_env is None or isinstance(profile.base_url_env, str), profile.name
