"""Layered configuration: env (`LIVE_MEMORY_<KEY>`) > `config.json` in the data dir > constants.

`options.Options` is the one typed table of user options (docs are generated from it). `load_settings()`
returns a frozen `Settings`: every option as a typed attribute plus what is resolved from them. It names each
field it builds and reads its value through a typed accessor, so mypy checks every value against its field
(no dict of values is splatted into `Settings`). An invalid value fails with a message naming the key, its
source and what was expected. Hot reload builds a new `Settings`; nothing mutates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from live_memory.core.errors import ConfigError
from live_memory.fs.safe_files import atomic_write, ensure_private_dir
from live_memory.providers.profiles import PROFILES, ProviderProfile, context_tokens_for
from live_memory.settings.options import (
    CONCURRENCY_CHOICES,
    CONFIG_FILE,
    HOLD_FILES_CHOICES,
    LOG_LEVEL_CHOICES,
    LONG_CACHE_CHOICES,
    OPTIONS,
    OPTIONS_BY_KEY,
    PROVIDER_CHOICES,
    REPO_ROOT_MODE_CHOICES,
    Choice,
    Options,
    one_of,
    option_values,
)


def default_data_dir(env: Mapping[str, str]) -> Path:
    """LIVE_MEMORY_DATA_DIR, else the plugin's data dir, else $XDG_DATA_HOME/live-memory."""
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return Path(env[name]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "share")
    return Path(xdg).expanduser() / "live-memory"


@dataclass(frozen=True, kw_only=True)
class Settings(Options):
    """Effective configuration: every option typed (`model`, `base_url`, `api_key` resolved to the values in
    use), plus what is derived from them. `sources[key]` says where each value came from."""

    sources: Mapping[str, str]
    data_dir: Path
    profile: ProviderProfile
    api_key_source: str  # where the credential came from; "none" when there is none
    context_tokens: int  # the window budget (max_context_tokens, else the model's context size)
    model_context_tokens: int  # the model's hard context size, as far as we know it
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    @property
    def config_file(self) -> Path:
        return self.data_dir / CONFIG_FILE

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, shown value, source) rows for `config show`; secret options masked."""
        rows = [("data_dir", str(self.data_dir), self.sources.get("data_dir", "default"))]
        for option, value in option_values(self):
            shown = (_mask(str(value)) or "(empty)") if option.secret else _show(value)
            rows.append((option.key, shown, self.sources[option.key]))
        budget_source = "max_context_tokens" if self.max_context_tokens else f"model {self.model}"
        rows.append(("context_tokens", str(self.context_tokens), budget_source))
        return rows


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "(empty)"
    if value == "":
        return "(empty)"
    return str(value)


def _mask(secret: str) -> str:
    if not secret:
        return ""
    return "****" + secret[-4:] if len(secret) > 8 else "****"


def read_config_file(path: Path) -> dict[str, object]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(OPTIONS_BY_KEY))
    if unknown:
        raise ConfigError(f"{path}: unknown option(s) {', '.join(unknown)}; see `live-memory config show`")
    return data


class _Layers:
    """Each option's value from the first layer that has it (env > config.json > default), cast by its row,
    and where it came from. Read back by typed accessors: `load_settings` names every field it builds, so mypy
    checks each value against the field's type. An accessor given a value of another type raises TypeError
    (a mistake in this module, not in the configuration)."""

    def __init__(self, env: Mapping[str, str], config_file: Path, sources: dict[str, str]) -> None:
        file_values = read_config_file(config_file)
        self.sources = sources
        self._values: dict[str, object] = {}
        self._unread = set(OPTIONS_BY_KEY)
        for option in OPTIONS:
            raw: object
            if option.env in env:
                raw, source = env[option.env], f"env {option.env}"
            elif option.file_allowed and option.key in file_values:
                raw, source = file_values[option.key], f"{CONFIG_FILE} ({config_file})"
            else:
                self._values[option.key], self.sources[option.key] = option.default, "default"
                continue
            try:
                self._values[option.key] = option.cast(raw)
            except ValueError as exc:
                raise ConfigError(f"invalid {option.key} from {source}: {exc}") from None
            self.sources[option.key] = source

    def _take(self, key: str) -> object:
        self._unread.discard(key)
        return self._values[key]

    def _wrong(self, key: str, value: object, expected: str) -> TypeError:
        return TypeError(f"option {key} holds {value!r}, read as {expected}")

    def flag(self, key: str) -> bool:
        value = self._take(key)
        if isinstance(value, bool):
            return value
        raise self._wrong(key, value, "true/false")

    def integer(self, key: str) -> int:
        value = self._take(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise self._wrong(key, value, "an integer")

    def number(self, key: str) -> float:
        value = self._take(key)
        if isinstance(value, float):
            return value
        raise self._wrong(key, value, "a number")

    def text(self, key: str) -> str:
        value = self._take(key)
        if isinstance(value, str):
            return value
        raise self._wrong(key, value, "text")

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._take(key)
        if isinstance(value, tuple) and all(isinstance(x, str) for x in value):
            return value
        raise self._wrong(key, value, "a list of text")

    def choice(self, key: str, allowed: tuple[Choice, ...]) -> Choice:
        value = self._take(key)
        chosen = one_of(value, allowed)
        if chosen is None:
            raise self._wrong(key, value, "one of " + ", ".join(allowed))
        return chosen

    def unread(self) -> list[str]:
        return sorted(self._unread)


def load_settings(env: Mapping[str, str] | None = None, data_dir: Path | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    sources: dict[str, str] = {}
    if data_dir is None:
        data_dir = default_data_dir(env)
        sources["data_dir"] = "env" if env.get("LIVE_MEMORY_DATA_DIR") else "default"
    else:
        sources["data_dir"] = "argument"
    read = _Layers(env, data_dir / CONFIG_FILE, sources)
    _check_relations(read)
    endpoint = _resolve_endpoint(read, env)
    settings = Settings(
        host=read.text("host"),
        port=read.integer("port"),
        log_level=read.choice("log_level", LOG_LEVEL_CHOICES),
        log_file=read.text("log_file"),
        shutdown_grace_s=read.number("shutdown_grace_s"),
        auth_token=read.text("auth_token"),
        allowed_hosts=read.texts("allowed_hosts"),
        allowed_roots=read.texts("allowed_roots"),
        provider=endpoint.profile.name,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=endpoint.model,
        summary_model=read.text("summary_model"),
        max_context_tokens=read.integer("max_context_tokens"),
        oauth=read.flag("oauth"),
        oauth_refresh=read.flag("oauth_refresh"),
        price_input=read.number("price_input"),
        price_output=read.number("price_output"),
        price_cache_write=read.number("price_cache_write"),
        price_cache_read=read.number("price_cache_read"),
        daily_budget_usd=read.number("daily_budget_usd"),
        workspace_daily_budget_usd=read.number("workspace_daily_budget_usd"),
        background=read.flag("background"),
        long_cache=read.choice("long_cache", LONG_CACHE_CHOICES),
        keep_warm=read.flag("keep_warm"),
        keep_warm_interval_s=read.number("keep_warm_interval_s"),
        keep_warm_max_idle_s=read.number("keep_warm_max_idle_s"),
        default_timeout_s=read.number("default_timeout_s"),
        max_iterations=read.integer("max_iterations"),
        provider_retry_base_s=read.number("provider_retry_base_s"),
        max_answer_tokens=read.integer("max_answer_tokens"),
        compaction_threshold=read.number("compaction_threshold"),
        compaction_floor=read.number("compaction_floor"),
        history_max_tokens=read.integer("history_max_tokens"),
        history_floor=read.number("history_floor"),
        history_answer_chars=read.integer("history_answer_chars"),
        distill_min_interval_s=read.number("distill_min_interval_s"),
        passive_ingestion=read.flag("passive_ingestion"),
        hold_files=read.choice("hold_files", HOLD_FILES_CHOICES),
        hold_reads=read.flag("hold_reads"),
        reuse_answers=read.flag("reuse_answers"),
        pre_read_tokens=read.integer("pre_read_tokens"),
        hot_set_tokens=read.integer("hot_set_tokens"),
        passive_max_file_bytes=read.integer("passive_max_file_bytes"),
        file_globs=read.texts("file_globs"),
        preload_globs=read.texts("preload_globs"),
        preload_max_total_bytes=read.integer("preload_max_total_bytes"),
        watch=read.flag("watch"),
        symbol_index=read.flag("symbol_index"),
        directory_tree_tokens=read.integer("directory_tree_tokens"),
        watch_max_directories=read.integer("watch_max_directories"),
        secret_globs=read.texts("secret_globs"),
        concurrency=read.choice("concurrency", CONCURRENCY_CHOICES),
        max_parallel_queries=read.integer("max_parallel_queries"),
        max_waiting_queries=read.integer("max_waiting_queries"),
        max_loaded_workspaces=read.integer("max_loaded_workspaces"),
        canonicalize_workspace=read.flag("canonicalize_workspace"),
        repo_root_mode=read.choice("repo_root_mode", REPO_ROOT_MODE_CHOICES),
        share_worktrees=read.flag("share_worktrees"),
        team_store=read.text("team_store"),
        team_repositories=read.texts("team_repositories"),
        team_timeout_s=read.number("team_timeout_s"),
        team_pool_size=read.integer("team_pool_size"),
        team_user=read.text("team_user"),
        team_trust=read.texts("team_trust"),
        team_share_answers=read.flag("team_share_answers"),
        async_tools=read.flag("async_tools"),
        status_show_questions=read.flag("status_show_questions"),
        force_explore_when_cold=read.flag("force_explore_when_cold"),
        sources=read.sources,
        data_dir=data_dir,
        profile=endpoint.profile,
        api_key_source=endpoint.api_key_source,
        context_tokens=endpoint.context_tokens,
        model_context_tokens=endpoint.model_context_tokens,
        env=env,
    )
    if read.unread():  # an option added to the table but not above would silently keep its default
        raise TypeError(f"load_settings does not set option(s) {', '.join(read.unread())}")
    return settings


def _check_relations(read: _Layers) -> None:
    floor, threshold = read.number("compaction_floor"), read.number("compaction_threshold")
    if floor > threshold:
        raise ConfigError(
            f"compaction_floor ({floor}, {read.sources['compaction_floor']}) must not exceed "
            f"compaction_threshold ({threshold}, {read.sources['compaction_threshold']})"
        )


@dataclass(frozen=True)
class _Endpoint:
    """The provider values in use: `model`, `base_url` and `api_key` resolved against the profile."""

    profile: ProviderProfile
    base_url: str
    api_key: str
    api_key_source: str  # "none" when there is no credential
    model: str
    context_tokens: int  # the window budget
    model_context_tokens: int  # the model's hard context size, as far as we know it (at least the budget)


def _resolve_endpoint(read: _Layers, env: Mapping[str, str]) -> _Endpoint:
    """Resolve model, base_url and api_key to the values in use; their sources say where those came from."""
    sources = read.sources
    profile = PROFILES[read.choice("provider", PROVIDER_CHOICES)]
    profile_default = f"profile {profile.name} default"
    own_base_url = True
    if base_url := read.text("base_url"):
        own_base_url = base_url.rstrip("/") == profile.base_url.rstrip("/")
    elif profile.base_url_env and env.get(profile.base_url_env):
        # The provider's own pair (e.g. ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY) belongs together.
        base_url, sources["base_url"] = env[profile.base_url_env], f"env {profile.base_url_env}"
        if profile.name == "ollama" and not base_url.startswith("http"):
            base_url = f"http://{base_url}"
        if profile.name == "ollama":
            base_url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
    else:
        base_url, sources["base_url"] = profile.base_url, profile_default
    if not base_url:
        raise ConfigError(
            f"provider {profile.name!r} has no default endpoint: set LIVE_MEMORY_BASE_URL "
            "(env) or base_url (config.json)"
        )
    api_key, key_source = "", "none"
    if configured_key := read.text("api_key"):
        api_key, key_source = configured_key, sources["api_key"]
    elif own_base_url:
        for name in profile.key_envs:
            if env.get(name):
                api_key, key_source = env[name], f"env {name}"
                sources["api_key"] = key_source
                break
    model = read.text("model")
    if not model:
        model, sources["model"] = profile.default_model, profile_default
    model_context = context_tokens_for(model, profile)
    context = read.integer("max_context_tokens") or model_context
    return _Endpoint(profile, base_url, api_key, key_source, model, context, max(model_context, context))


def file_value(key: str, raw: object) -> object:
    """`raw` cast by `key`'s option, for config.json; a ConfigError names what is wrong (an unknown key,
    an option only the environment may set, a bad value)."""
    option = OPTIONS_BY_KEY.get(key)
    if option is None:
        raise ConfigError(f"unknown option {key!r}; `live-memory config show` lists them")
    if not option.file_allowed:
        raise ConfigError(f"{key} can only be set in the server's environment ({option.env})")
    try:
        return option.cast(raw)
    except ValueError as exc:
        raise ConfigError(f"invalid {key}: {exc}") from None


def write_config_value(data_dir: Path, key: str, raw: str) -> dict[str, object]:
    """Validate `key=raw` and store it in config.json (used by `config set` and the plugin command)."""
    value = file_value(key, raw)
    path = data_dir / CONFIG_FILE
    current = read_config_file(path)
    current[key] = list(value) if isinstance(value, tuple) else value
    ensure_private_dir(data_dir)
    atomic_write(path, (json.dumps(current, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
    return current
