"""The user options: one row per option (key, default, strict caster, one-line doc).

`config.py` resolves them (env > config.json > default); `config_docs.py` documents them. Casters raise
ValueError with a message that says what was expected; the loader adds the key and the source.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from live_memory import constants as C
from live_memory.providers.profiles import PROFILES

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
