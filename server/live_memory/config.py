"""Layered configuration: env (`LIVE_MEMORY_<KEY>`) > `config.json` in the data dir > constants.

`OPTIONS` is the one reference table of user options (docs are generated from it). `load_settings()`
returns a frozen `Settings`; an invalid value fails with a message naming the key and its source.
Hot reload builds a new `Settings`; nothing mutates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_memory import constants as C
from live_memory.errors import ConfigError
from live_memory.providers.profiles import PROFILES, ProviderProfile, context_tokens_for

ENV_PREFIX = "LIVE_MEMORY_"
CONFIG_FILE = "config.json"

Caster = Callable[[str, Any], Any]


def _as_bool(key: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true/false (1/0), got {raw!r}")


def _as_int(key: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError(f"expected an integer, got {raw!r}")
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected an integer, got {raw!r}") from None


def _as_float(key: str, raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {raw!r}")
    try:
        return float(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected a number, got {raw!r}") from None


def _as_str(key: str, raw: Any) -> str:
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        raise ValueError(f"expected a string, got {raw!r}")
    return str(raw).strip()


def _as_list(key: str, raw: Any) -> tuple[str, ...]:
    """Lists come as JSON arrays in config.json and comma- or path-separated strings in env."""
    if isinstance(raw, list | tuple):
        items = [str(x).strip() for x in raw]
    elif isinstance(raw, str):
        separators = "," if "," in raw else os.pathsep
        items = [x.strip() for x in raw.split(separators)]
    else:
        raise ValueError(f"expected a list of strings, got {raw!r}")
    return tuple(x for x in items if x)


def _choice(*allowed: str) -> Caster:
    def cast(key: str, raw: Any) -> str:
        value = _as_str(key, raw).lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {raw!r}")
        return value

    return cast


def _bounded(caster: Caster, low: float | None = None, high: float | None = None) -> Caster:
    def cast(key: str, raw: Any) -> Any:
        value = caster(key, raw)
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}, got {value}")
        return value

    return cast


@dataclass(frozen=True)
class Option:
    key: str
    default: Any
    cast: Caster
    doc: str
    secret: bool = False
    file_allowed: bool = True  # False: env only (e.g. where config.json itself lives)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper()


OPTIONS: tuple[Option, ...] = (
    # server
    Option("host", C.DEFAULT_HOST, _as_str, "Address to bind. Loopback by default."),
    Option("port", C.DEFAULT_PORT, _bounded(_as_int, 1, 65535), "TCP port to bind."),
    Option("log_level", C.LOG_LEVEL, _choice("debug", "info", "warning", "error"), "Log verbosity."),
    Option("log_file", "", _as_str, "Also log to this rotating file (10 MiB x 3); empty: stderr only."),
    # security
    Option(
        "auth_token",
        "",
        _as_str,
        "Bearer token every client must send (required to bind a non-loopback address).",
        secret=True,
    ),
    Option(
        "allowed_hosts",
        (),
        _as_list,
        "Extra host names accepted in Host/Origin headers (loopback names always are).",
    ),
    Option(
        "allowed_roots",
        (),
        _as_list,
        "Directories workspaces must lie under; empty means the server user's home directory.",
    ),
    # provider
    Option(
        "provider",
        C.DEFAULT_PROVIDER,
        _choice(*PROFILES),
        "Provider profile: " + ", ".join(PROFILES) + ".",
    ),
    Option("base_url", "", _as_str, "Endpoint base URL; overrides the profile's."),
    Option("api_key", "", _as_str, "API key for the endpoint; overrides provider variables.", secret=True),
    Option("model", "", _as_str, "Model id; empty means the profile's default model."),
    Option("summary_model", "", _as_str, "Model for compaction summaries; empty means `model`."),
    Option(
        "max_context_tokens",
        0,
        _bounded(_as_int, 0),
        "Context window budget in tokens; 0 means the model's known context size.",
    ),
    Option(
        "oauth",
        C.OAUTH_ENABLED,
        _as_bool,
        "Use Claude Code's subscription credential when no API key is set (see README: terms).",
    ),
    Option(
        "oauth_refresh",
        C.OAUTH_REFRESH_ENABLED,
        _as_bool,
        "Refresh an expired subscription credential ourselves (stored in our data dir only).",
    ),
    # cost
    Option("price_input", -1.0, _as_float, "USD per million uncached input tokens; negative: the built-in table."),
    Option("price_output", -1.0, _as_float, "USD per million output tokens; negative: the built-in table."),
    Option("price_cache_write", -1.0, _as_float, "USD per million cache-write tokens; negative: the built-in table."),
    Option("price_cache_read", -1.0, _as_float, "USD per million cache-read tokens; negative: the built-in table."),
    Option(
        "daily_budget_usd",
        0.0,
        _bounded(_as_float, 0.0),
        "Server-wide spend cap per UTC day (questions + background); 0 means no cap.",
    ),
    Option(
        "workspace_daily_budget_usd",
        0.0,
        _bounded(_as_float, 0.0),
        "Per-workspace spend cap per UTC day; 0 means no cap.",
    ),
    Option(
        "background",
        True,
        _as_bool,
        "Allow optional background model calls (distillation, keep-warm). Q&A compaction always runs.",
    ),
    # keep-warm
    Option("keep_warm", C.KEEP_WARM, _as_bool, "Ping recently active workspaces so the provider's cache stays warm."),
    Option(
        "keep_warm_interval_s",
        0.0,
        _bounded(_as_float, 0.0),
        "Seconds between pings; 0 means the provider's default (240 s Anthropic/OpenAI, never for DeepSeek).",
    ),
    Option(
        "keep_warm_max_idle_s",
        C.KEEP_WARM_MAX_IDLE_S,
        _bounded(_as_float, 0.0),
        "Stop pinging a workspace that has not been asked anything for this long.",
    ),
    # questions
    Option(
        "default_timeout_s",
        C.DEFAULT_TIMEOUT_S,
        _bounded(_as_float, C.MIN_TIMEOUT_S, C.MAX_TIMEOUT_S),
        "Soft deadline per question; the best answer so far is returned at this point.",
    ),
    Option(
        "max_iterations",
        C.MAX_ITERATIONS,
        _bounded(_as_int, 1, 200),
        "Most model turns (tool-loop iterations) per question.",
    ),
    Option(
        "max_answer_tokens",
        C.DEFAULT_MAX_ANSWER_TOKENS,
        _bounded(_as_int, C.MIN_ANSWER_TOKENS, C.MAX_ANSWER_TOKENS),
        "Default answer-length cap (tokens), disclosed to the model.",
    ),
    # context window
    Option(
        "compaction_threshold",
        C.COMPACTION_THRESHOLD,
        _bounded(_as_float, 0.1, 0.99),
        "Compaction starts when the window fills past this share of its budget (high watermark).",
    ),
    Option(
        "compaction_floor",
        C.COMPACTION_FLOOR,
        _bounded(_as_float, 0.05, 0.99),
        "Compaction shrinks the window down to this share of its budget (low watermark).",
    ),
    Option(
        "distill_min_interval_s",
        C.DISTILL_MIN_INTERVAL_S,
        _bounded(_as_float, 0.0),
        "Cooldown between summarizer calls that distill observed files (else their bytes are shed).",
    ),
    # files and ingestion
    Option(
        "passive_ingestion",
        C.PASSIVE_INGESTION,
        _as_bool,
        "Hold the bytes of files the agents read or edit (teed by the hooks) in the window.",
    ),
    Option(
        "passive_max_file_bytes",
        C.PASSIVE_MAX_FILE_BYTES,
        _bounded(_as_int, 1024, 16 * 1024 * 1024),
        "Largest teed or preloaded file held verbatim; larger ones are recorded manifest-only.",
    ),
    Option(
        "file_globs",
        (),
        _as_list,
        "Monitoring scope (fnmatch, `*` crosses `/`): only matching paths are tracked. Empty: all.",
    ),
    Option(
        "preload_globs",
        (),
        _as_list,
        "Reference documents read verbatim into every workspace on load (relative globs).",
    ),
    Option(
        "preload_max_total_bytes",
        C.PRELOAD_MAX_TOTAL_BYTES,
        _bounded(_as_int, 0),
        "Total preload cap; also clamped to the compaction floor's share of the window.",
    ),
    Option(
        "watch",
        C.WATCH_ENABLED,
        _as_bool,
        "Watch each loaded workspace for edits made outside the agents' hooks (OS file events).",
    ),
    Option(
        "secret_globs",
        C.DEFAULT_SECRET_GLOBS,
        _as_list,
        "Files withheld from the model (listed as present-but-withheld; never read, grepped or teed).",
    ),
    # workspaces and admission
    Option(
        "concurrency",
        C.CONCURRENCY_MODE,
        _choice("parallel", "serial"),
        "Same-workspace questions: `parallel` (forked windows) or `serial` (one at a time, FIFO).",
    ),
    Option(
        "max_parallel_queries",
        C.MAX_PARALLEL_QUERIES,
        _bounded(_as_int, 1, 64),
        "Questions running at once per workspace in parallel mode.",
    ),
    Option(
        "max_waiting_queries",
        C.MAX_WAITING_QUERIES,
        _bounded(_as_int, 0, 1024),
        "Questions that may wait per workspace; beyond that callers are told to retry.",
    ),
    Option(
        "max_loaded_workspaces",
        C.MAX_LOADED_WORKSPACES,
        _bounded(_as_int, 1, 10_000),
        "Workspaces held in memory; the least recently used idle one is unloaded (snapshot kept).",
    ),
    Option(
        "canonicalize_workspace",
        C.CANONICALIZE_WORKSPACE,
        _as_bool,
        "Key memories by the enclosing git root (subdirectories share their repository's memory).",
    ),
    Option(
        "repo_root_mode",
        C.REPO_ROOT_MODE,
        _choice("nearest", "outermost"),
        "Inside a submodule: `nearest` (its own memory) or `outermost` (the superproject's).",
    ),
    Option(
        "share_worktrees",
        C.SHARE_WORKTREES,
        _as_bool,
        "Linked worktrees of one repository share one memory (tools stay jailed to each worktree).",
    ),
    Option(
        "async_tools",
        C.ASYNC_TOOLS,
        _as_bool,
        "Also offer ask_live_memory_submit / ask_live_memory_result (submit now, collect later).",
    ),
    Option(
        "force_explore_when_cold",
        C.FORCE_EXPLORE_WHEN_COLD,
        _as_bool,
        "Reject a tool-less first answer once while the memory is cold.",
    ),
)

OPTIONS_BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}


def default_data_dir(env: Mapping[str, str]) -> Path:
    """LIVE_MEMORY_DATA_DIR, else the plugin's data dir, else $XDG_DATA_HOME/live-memory."""
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return Path(env[name]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "share")
    return Path(xdg).expanduser() / "live-memory"


@dataclass(frozen=True)
class Settings:
    """Effective configuration. `sources[key]` says where each value came from."""

    values: Mapping[str, Any]
    sources: Mapping[str, str]
    data_dir: Path
    profile: ProviderProfile
    model: str
    base_url: str
    api_key: str  # resolved credential (may come from a provider variable); "" when none
    api_key_source: str
    context_tokens: int  # the window budget (max_context_tokens, else the model's context size)
    model_context_tokens: int  # the model's hard context size, as far as we know it
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        # Options read as attributes: settings.port, settings.default_timeout_s, ...
        values = object.__getattribute__(self, "values")
        if key in values:
            return values[key]
        raise AttributeError(key)

    @property
    def config_file(self) -> Path:
        return self.data_dir / CONFIG_FILE

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, shown value, source) rows for `config show`; secrets masked."""
        rows = [("data_dir", str(self.data_dir), self.sources.get("data_dir", "default"))]
        for option in OPTIONS:
            value = self.values[option.key]
            shown = _mask(str(value)) if option.secret else _show(value)
            rows.append((option.key, shown, self.sources[option.key]))
        rows.append(("effective model", self.model, "resolved"))
        rows.append(("effective base_url", self.base_url or "(none)", "resolved"))
        rows.append(("effective credential", _mask(self.api_key) or "(none)", self.api_key_source))
        rows.append(("effective context_tokens", str(self.context_tokens), "resolved"))
        return rows


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "(empty)"
    if value == "":
        return "(empty)"
    return str(value)


def _mask(secret: str) -> str:
    if not secret:
        return ""
    return "****" + secret[-4:] if len(secret) > 8 else "****"


def read_config_file(path: Path) -> dict[str, Any]:
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


def load_settings(env: Mapping[str, str] | None = None, data_dir: Path | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    sources: dict[str, str] = {}
    if data_dir is None:
        data_dir = default_data_dir(env)
        sources["data_dir"] = "env" if env.get("LIVE_MEMORY_DATA_DIR") else "default"
    else:
        sources["data_dir"] = "argument"
    file_values = read_config_file(data_dir / CONFIG_FILE)
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw: Any
        if option.env in env:
            raw, source = env[option.env], f"env {option.env}"
        elif option.file_allowed and option.key in file_values:
            raw, source = file_values[option.key], f"config.json ({data_dir / CONFIG_FILE})"
        else:
            values[option.key], sources[option.key] = option.default, "default"
            continue
        try:
            values[option.key] = option.cast(option.key, raw)
        except ValueError as exc:
            raise ConfigError(f"invalid {option.key} from {source}: {exc}") from None
        sources[option.key] = source
    _check_relations(values, sources)
    return _resolve_provider(values, sources, data_dir, env)


def _check_relations(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    if values["compaction_floor"] > values["compaction_threshold"]:
        raise ConfigError(
            f"compaction_floor ({values['compaction_floor']}, {sources['compaction_floor']}) must not exceed "
            f"compaction_threshold ({values['compaction_threshold']}, {sources['compaction_threshold']})"
        )


def _resolve_provider(
    values: dict[str, Any], sources: dict[str, str], data_dir: Path, env: Mapping[str, str]
) -> Settings:
    profile = PROFILES[values["provider"]]
    own_base_url = True
    if values["base_url"]:
        base_url = values["base_url"]
        own_base_url = base_url.rstrip("/") == profile.base_url.rstrip("/")
    elif profile.base_url_env and env.get(profile.base_url_env):
        # The provider's own pair (e.g. ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY) belongs together.
        base_url = env[profile.base_url_env]
        if profile.name == "ollama" and not base_url.startswith("http"):
            base_url = f"http://{base_url}"
        if profile.name == "ollama":
            base_url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
    else:
        base_url = profile.base_url
    if not base_url:
        raise ConfigError(
            f"provider {profile.name!r} has no default endpoint: set LIVE_MEMORY_BASE_URL "
            "(env) or base_url (config.json)"
        )
    api_key, key_source = "", "none"
    if values["api_key"]:
        api_key, key_source = values["api_key"], sources["api_key"]
    elif own_base_url:
        for name in profile.key_envs:
            if env.get(name):
                api_key, key_source = env[name], f"env {name}"
                break
    model = values["model"] or profile.default_model
    model_context = context_tokens_for(model, profile)
    context = values["max_context_tokens"] or model_context
    return Settings(
        values=values,
        sources=sources,
        data_dir=data_dir,
        profile=profile,
        model=model,
        base_url=base_url,
        api_key=api_key,
        api_key_source=key_source,
        context_tokens=context,
        model_context_tokens=max(model_context, context),
        env=env,
    )


def write_config_value(data_dir: Path, key: str, raw: str) -> dict[str, Any]:
    """Validate `key=raw` and store it in config.json (used by `config set` and the plugin command)."""
    option = OPTIONS_BY_KEY.get(key)
    if option is None:
        raise ConfigError(f"unknown option {key!r}; known: {', '.join(OPTIONS_BY_KEY)}")
    if not option.file_allowed:
        raise ConfigError(f"{key} can only be set in the environment ({option.env})")
    try:
        value = option.cast(key, raw)
    except ValueError as exc:
        raise ConfigError(f"invalid {key}: {exc}") from None
    path = data_dir / CONFIG_FILE
    current = read_config_file(path)
    current[key] = list(value) if isinstance(value, tuple) else value
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return current
