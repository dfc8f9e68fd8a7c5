"""The user options as one typed table: the frozen `Options` dataclass.

Each field is an option. Its annotation is its type (a choice is a Literal alias, declared here once and used
as such by the policies that read it); `option(...)` carries its default (from constants.py), bounds, one-line
doc and flags: a field is the option's one declaration. `OPTIONS` (the rows `config.py` resolves into
`Settings`, `config set` validates and `config_docs.py` documents) is derived from the fields, and each row's
strict caster from the annotation, so no row can disagree with its type; a default that does not fit its own
row fails at import. Casters raise ValueError saying what was expected; the loader adds the key and the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeAlias, get_args, get_origin, get_type_hints

from live_memory import constants as C
from live_memory.providers.profiles import ProviderName
from live_memory.settings.option_casters import Caster, as_bool, as_float, as_int, as_list, as_str, bounded, choice

ENV_PREFIX = "LIVE_MEMORY_"
CONFIG_FILE = "config.json"
_SPEC = "live_memory.option"

# The options' choices, each declared once and used as such by the policies that read them.
HoldFiles: TypeAlias = Literal["used", "earned", "all", "none"]  # which bytes the window holds
LongCache: TypeAlias = Literal["off", "prefix", "history"]  # which breakpoints ask for the 1-hour cache
Concurrency: TypeAlias = Literal["parallel", "serial"]  # how a workspace admits questions
RepoRootMode: TypeAlias = Literal["nearest", "outermost"]  # which git root a cwd belongs to
LogLevel: TypeAlias = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True)
class _Spec:
    doc: str
    low: float | None
    high: float | None
    secret: bool
    file_allowed: bool
    restart: bool


def option(
    default: object,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    secret: bool = False,
    file_allowed: bool = True,  # False: env only (e.g. where config.json itself lives)
    restart: bool = False,  # True: read once at start (binding, logging, security, MCP tools); a reload defers it
) -> Any:  # typed as Any, like dataclasses.field(), so the field's annotation is the type mypy sees
    """Declare one option field of `Options`; secrets stay out of the object's repr."""
    spec = _Spec(doc, low, high, secret, file_allowed, restart)
    return field(default=default, repr=not secret, metadata={_SPEC: spec})


@dataclass(frozen=True)
class Options:
    """Every user option with its type and default; `Settings` extends it with the resolved extras."""

    # --- server
    host: str = option(C.DEFAULT_HOST, "Address to bind. Loopback by default.", restart=True)
    port: int = option(C.DEFAULT_PORT, "TCP port to bind.", low=1, high=65535, restart=True)
    log_level: LogLevel = option(C.LOG_LEVEL, "Log verbosity.", restart=True)
    log_file: str = option("", "Also log to this rotating file (10 MiB x 3); empty: stderr only.", restart=True)
    shutdown_grace_s: float = option(
        C.SHUTDOWN_GRACE_S,
        "On a stop signal, seconds running questions get to return their best answer (at most the default, "
        "which the service templates' stop timeouts allow for).",
        low=0.0,
        high=C.SHUTDOWN_GRACE_S,
        restart=True,
    )
    # --- security
    auth_token: str = option(
        "",
        "Bearer token every client must send (required to bind a non-loopback address).",
        secret=True,
        restart=True,
    )
    allowed_hosts: tuple[str, ...] = option(
        (), "Extra host names accepted in Host/Origin headers (loopback names always are).", restart=True
    )
    allowed_roots: tuple[str, ...] = option(
        (), "Directories workspaces must lie under; empty means the server user's home directory."
    )
    # --- provider (model, base_url and api_key read as their effective values on `Settings`)
    provider: ProviderName = option(
        C.DEFAULT_PROVIDER, "Provider profile (endpoint, default model, key variables); see the table below."
    )
    base_url: str = option("", "Endpoint base URL; overrides the profile's.")
    api_key: str = option("", "API key for the endpoint; overrides provider variables.", secret=True)
    model: str = option("", "Model id; empty means the profile's default model.")
    summary_model: str = option("", "Model for compaction summaries; empty means `model`.")
    max_context_tokens: int = option(
        0, "Context window budget in tokens; 0 means the model's known context size.", low=0
    )
    oauth: bool = option(
        C.OAUTH_ENABLED, "Use Claude Code's subscription credential when no API key is set (see README: terms)."
    )
    oauth_refresh: bool = option(
        C.OAUTH_REFRESH_ENABLED, "Refresh an expired subscription credential ourselves (stored in our data dir only)."
    )
    # --- cost
    price_input: float = option(-1.0, "USD per million uncached input tokens; negative: the built-in table.")
    price_output: float = option(-1.0, "USD per million output tokens; negative: the built-in table.")
    price_cache_write: float = option(-1.0, "USD per million cache-write tokens; negative: the built-in table.")
    price_cache_read: float = option(-1.0, "USD per million cache-read tokens; negative: the built-in table.")
    daily_budget_usd: float = option(
        0.0, "Server-wide spend cap per UTC day (questions + background); 0 means no cap.", low=0.0
    )
    workspace_daily_budget_usd: float = option(0.0, "Per-workspace spend cap per UTC day; 0 means no cap.", low=0.0)
    background: bool = option(
        True, "Allow optional background model calls (distillation, keep-warm). Q&A compaction always runs."
    )
    long_cache: LongCache = option(
        C.LONG_CACHE,
        "Which cached parts of the prompt ask for the provider's 1-hour cache (Anthropic: written at 2x the "
        "input price instead of 1.25x, kept an hour instead of 5 minutes, so a pause of 5-60 minutes between "
        "questions does not write them again): `off`, `prefix` (system prompt, tree, ledger, held files), or "
        "`history` (also the questions and answers so far). Providers without one ignore it.",
    )
    # --- keep-warm
    keep_warm: bool = option(C.KEEP_WARM, "Ping recently active workspaces so the provider's cache stays warm.")
    keep_warm_interval_s: float = option(
        0.0,
        "Seconds between pings; 0 means the provider's default (240 s Anthropic/OpenAI, never for DeepSeek).",
        low=0.0,
    )
    keep_warm_max_idle_s: float = option(
        C.KEEP_WARM_MAX_IDLE_S, "Stop pinging a workspace that has not been asked anything for this long.", low=0.0
    )
    # --- questions
    default_timeout_s: float = option(
        C.DEFAULT_TIMEOUT_S,
        "Soft deadline per question; the best answer so far is returned at this point.",
        low=C.MIN_TIMEOUT_S,
        high=C.MAX_TIMEOUT_S,
    )
    max_iterations: int = option(
        C.MAX_ITERATIONS, "Most model turns (tool-loop iterations) per question.", low=1, high=200
    )
    provider_retry_base_s: float = option(
        C.RETRY_BASE_DELAY_S,
        "Seconds before retrying a busy, failed or dropped model call; doubled per attempt (with jitter), up to "
        f"{C.RETRY_MAX_DELAY_S:g} s. A retry-after the provider sends wins.",
        low=0.0,
        high=C.RETRY_MAX_DELAY_S,
    )
    max_answer_tokens: int = option(
        C.DEFAULT_MAX_ANSWER_TOKENS,
        "Default answer-length cap (tokens), disclosed to the model.",
        low=C.MIN_ANSWER_TOKENS,
        high=C.MAX_ANSWER_TOKENS,
    )
    # --- context window
    compaction_threshold: float = option(
        C.COMPACTION_THRESHOLD,
        "Compaction starts when the window fills past this share of its budget (high watermark).",
        low=0.1,
        high=0.99,
    )
    compaction_floor: float = option(
        C.COMPACTION_FLOOR,
        "Compaction shrinks the window down to this share of its budget (low watermark).",
        low=0.05,
        high=0.99,
    )
    history_max_tokens: int = option(
        C.HISTORY_MAX_TOKENS,
        "Q&A history above this many tokens is summarized into the ledger (down to history_floor's share of "
        "it): every request re-reads the history. 0: only the window budget triggers compaction.",
        low=0,
    )
    history_floor: float = option(
        C.HISTORY_FLOOR,
        "A history past history_max_tokens folds down to this share of it (the two latest exchanges stay): "
        "each fold rewrites the cached prompt once, so deep, rare folds cost less than shallow, frequent ones.",
        low=0.0,
        high=0.99,
    )
    history_answer_chars: int = option(
        C.HISTORY_ANSWER_CHARS,
        "The history keeps an answer's lead (its first line, and the next ones to a blank line or this many "
        "characters) and the path:line citations of the rest; the agent gets the whole answer. 0 keeps answers "
        "whole.",
        low=0,
    )
    distill_min_interval_s: float = option(
        C.DISTILL_MIN_INTERVAL_S,
        "Cooldown between summarizer calls that distill observed files (else their bytes are shed).",
        low=0.0,
    )
    # --- files and ingestion
    passive_ingestion: bool = option(
        C.PASSIVE_INGESTION, "Hold the bytes of files the agents read or edit (teed by the hooks) in the window."
    )
    hold_files: HoldFiles = option(
        C.HOLD_FILES,
        "Which bytes the window holds: `used` (the hot set: the lines answers cite, while their expected "
        "re-reads cost more than holding them, within `hot_set_tokens`; measured dearer on the session bill), "
        "`earned` (teed files an answer cited or a fact came from), `all` teed files, or `none`.",
    )
    hold_reads: bool = option(
        C.HOLD_READS,
        "Hold the files the memory's model read whole while their expected re-reads cost more than holding them "
        "(the hot set, within `hot_set_tokens`): asked about again, it answers without reading them again.",
    )
    reuse_answers: bool = option(
        C.REUSE_ANSWERS,
        "Give an earlier answer again, with no model call, to a question that asks for the same thing (the same "
        "files, directories, code names and topic words, however worded) while the files it rests on are unchanged.",
    )
    pre_read_tokens: int = option(
        C.PRE_READ_TOKENS,
        'Most tokens of the files a question asks about as a whole ("walk me through `cli.py`", "how is expiry '
        'handled in `auth/`?") read before the model sees it, saving its first round; 0: never.',
        low=0,
        high=200_000,
    )
    hot_set_tokens: int = option(
        C.HOT_SET_TOKENS,
        "Most tokens the hot set holds (`hold_reads`, `hold_files` used); what is worth most per token stays.",
        low=0,
        high=1_000_000,
    )
    passive_max_file_bytes: int = option(
        C.PASSIVE_MAX_FILE_BYTES,
        "Largest teed or preloaded file held verbatim; larger ones are recorded manifest-only.",
        low=1024,
        high=16 * 1024 * 1024,
    )
    file_globs: tuple[str, ...] = option(
        (), "Monitoring scope (fnmatch, `*` crosses `/`): only matching paths are tracked. Empty: all."
    )
    preload_globs: tuple[str, ...] = option(
        (), "Reference documents read verbatim into every workspace on load (relative globs)."
    )
    preload_max_total_bytes: int = option(
        C.PRELOAD_MAX_TOTAL_BYTES,
        "Total preload cap; also clamped to the compaction floor's share of the window.",
        low=0,
    )
    watch: bool = option(
        C.WATCH_ENABLED, "Watch each loaded workspace for edits made outside the agents' hooks (OS file events)."
    )
    directory_tree_tokens: int = option(
        C.DIRECTORY_TREE_TOKENS,
        "Most tokens the directory tree may take (it also stays within 10% of the window); larger trees "
        "show directories with file counts. When the prompt's head would be shorter than the model's minimum "
        "cacheable prefix (4,096 tokens on Haiku 4.5), the tree may grow just past it: a shorter head is never "
        "cached.",
        low=200,
    )
    symbol_index: bool = option(
        C.SYMBOL_INDEX,
        "Keep a symbol index of each checkout (SQLite, beside its snapshot): a lookup of a name the question "
        "mentions reads it instead of scanning the workspace with ripgrep (which answers until the index is built).",
    )
    watch_max_directories: int = option(
        C.WATCH_MAX_DIRECTORIES,
        "Most directories the OS watcher watches per workspace (one watch each): those of the recently used files "
        "first, then the shallow ones; the others rely on the hooks and SHA-256 re-validation, and /stats says so.",
        low=1,
    )
    secret_globs: tuple[str, ...] = option(
        C.DEFAULT_SECRET_GLOBS,
        "Files withheld from the model (listed as present-but-withheld; never read, grepped or teed).",
    )
    # --- workspaces and admission
    concurrency: Concurrency = option(
        C.CONCURRENCY_MODE,
        "Same-workspace questions: `parallel` (forked windows) or `serial` (one at a time, FIFO).",
    )
    max_parallel_queries: int = option(
        C.MAX_PARALLEL_QUERIES, "Questions running at once per workspace in parallel mode.", low=1, high=64
    )
    max_waiting_queries: int = option(
        C.MAX_WAITING_QUERIES,
        "Questions that may wait per workspace; beyond that callers are told to retry.",
        low=0,
        high=1024,
    )
    max_loaded_workspaces: int = option(
        C.MAX_LOADED_WORKSPACES,
        "Workspaces held in memory; the least recently used idle one is unloaded (snapshot kept).",
        low=1,
        high=10_000,
    )
    canonicalize_workspace: bool = option(
        C.CANONICALIZE_WORKSPACE,
        "Key memories by the enclosing git root (subdirectories share their repository's memory).",
    )
    repo_root_mode: RepoRootMode = option(
        C.REPO_ROOT_MODE, "Inside a submodule: `nearest` (its own memory) or `outermost` (the superproject's)."
    )
    share_worktrees: bool = option(
        C.SHARE_WORKTREES, "Linked worktrees of one repository share one memory (tools stay jailed to each worktree)."
    )
    # --- a team's memory (team_sync.py)
    team_store: str = option(
        "",
        "PostgreSQL URL of the team store (`postgresql://user@host/db`; TLS and credentials from the URL or the "
        "PG* environment variables), where this server shares the facts it learns and finds the team's; empty: "
        "off, knowledge stays on this machine.",
        secret=True,
        restart=True,
    )
    team_repositories: tuple[str, ...] = option(
        (),
        "Repositories whose knowledge is shared, by identity as /stats shows it (e.g. `github.com/org/app`); "
        "empty: every repository under allowed_roots.",
    )
    team_timeout_s: float = option(
        C.TEAM_STORE_TIMEOUT_S, "Longest wait for the team store on any one call.", low=0.1, high=60.0, restart=True
    )
    team_pool_size: int = option(
        C.TEAM_STORE_POOL_MAX, "Most connections this server opens to the team store.", low=1, high=64, restart=True
    )
    team_user: str = option(
        "",
        "A name this server writes beside its rows in the team store (empty: the server user's login name); "
        "never shown as their author, which is the database role that wrote them.",
        restart=True,
    )
    team_trust: tuple[str, ...] = option(
        C.TEAM_TRUST,
        "The authors whose facts and answers this server uses: the PostgreSQL roles that wrote them, as the team "
        "store's database records them (`live-memory team-setup` gives each teammate one). Empty: every author "
        "of the store is used, each fact and answer still shown with the role the database proves wrote it.",
        restart=True,
    )
    team_share_answers: bool = option(
        C.TEAM_SHARE_ANSWERS,
        "Also share questions and the answers given, with the files each rests on: a teammate's server whose "
        "files have the same bytes answers the same question from it, without a model call. Off: no question "
        "or answer text leaves this machine.",
        restart=True,
    )
    async_tools: bool = option(
        C.ASYNC_TOOLS,
        "Also offer ask_live_memory_submit / ask_live_memory_result (submit now, collect later).",
        restart=True,
    )
    # --- status page
    status_show_questions: bool = option(
        C.STATUS_SHOW_QUESTIONS,
        "Show the text of the last few questions per workspace on the status page (`GET /`); off: only their "
        "time, latency, tool calls and cost.",
    )
    force_explore_when_cold: bool = option(
        C.FORCE_EXPLORE_WHEN_COLD, "Reject a tool-less first answer once while the memory is cold."
    )


# --- the derived rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option as `config.py`, `config set` and the docs see it; derived from an `Options` field."""

    key: str
    type: object  # the field's annotation (bool, int, float, str, tuple[str, ...] or a Literal)
    kind: str  # the accepted values in words, for the docs
    default: object
    cast: Caster
    doc: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    secret: bool = False
    file_allowed: bool = True
    restart: bool = False  # read once at start: `POST /config` stores it for the next start

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper()

    def parse(self, raw: object) -> object:
        """`raw` (env text or a JSON value) cast to this option's type; a ValueError says what was expected.
        `Settings` is built from a dict of these values, which mypy cannot check field by field: a caster that
        returns another type is caught here, by name (a TypeError: the table is wrong, not the configuration)."""
        value = self.cast(raw)
        if not conforms(value, self.type):
            raise TypeError(f"option {self.key}: its caster turned {raw!r} into {value!r}, not {self.kind}")
        return value


_SCALARS: dict[object, tuple[Caster, str]] = {
    bool: (as_bool, "true/false"),
    int: (as_int, "integer"),
    float: (as_float, "number"),
    str: (as_str, "text"),
    tuple[str, ...]: (as_list, "list of text"),
}


def conforms(value: object, hint: object) -> bool:
    """Whether `value` is exactly of the declared option type (an int is not a float, a bool not an int)."""
    if get_origin(hint) is Literal:
        return value in get_args(hint)
    if hint == tuple[str, ...]:
        return isinstance(value, tuple) and all(isinstance(x, str) for x in value)
    return type(value) is hint


def _row(key: str, hint: object, spec: _Spec, default: object) -> Option:
    choices: tuple[str, ...] = ()
    base: object
    if get_origin(hint) is Literal:
        if not all(isinstance(x, str) for x in get_args(hint)):
            raise TypeError(f"option {key}: a Literal type lists its choices as strings")
        choices, base = get_args(hint), str
    elif hint in _SCALARS:
        base = hint
    else:
        raise TypeError(f"option {key}: unsupported type {hint!r} (bool, int, float, str, tuple[str, ...], Literal)")
    cast, kind = _SCALARS[base]
    if choices:
        cast, kind = choice(choices), "one of " + ", ".join(choices)
    if spec.low is not None or spec.high is not None:
        if base is not int and base is not float:
            raise TypeError(f"option {key}: bounds need an int or float type, not {hint!r}")
        cast = bounded(cast, spec.low, spec.high)
        if spec.low is not None and spec.high is not None:
            kind += f", {spec.low} to {spec.high}"
        else:
            kind += f", at least {spec.low}" if spec.low is not None else f", at most {spec.high}"
    row = Option(
        key,
        hint,
        kind,
        default,
        cast,
        spec.doc,
        choices,
        spec.low,
        spec.high,
        spec.secret,
        spec.file_allowed,
        spec.restart,
    )
    if not conforms(default, hint):
        raise TypeError(f"option {key}: default {default!r} does not match its declared type ({kind})")
    try:
        fits = cast(default) == default
    except ValueError as exc:
        raise TypeError(f"option {key}: default {default!r} is invalid ({kind}): {exc}") from None
    if not fits:  # e.g. a choice default in another case than the caster produces
        raise TypeError(f"option {key}: default {default!r} is not in the form its caster produces")
    return row


def options_of(table: type) -> tuple[Option, ...]:
    """The rows of an options dataclass, in declaration order; a field that disagrees with its type raises."""
    hints = get_type_hints(table)
    rows = []
    for f in fields(table):
        spec = f.metadata.get(_SPEC)
        if not isinstance(spec, _Spec):
            continue  # not an option (e.g. a resolved extra of a subclass)
        rows.append(_row(f.name, hints[f.name], spec, f.default))
    return tuple(rows)


OPTIONS: tuple[Option, ...] = options_of(Options)
OPTIONS_BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}


def option_values(options: Options) -> tuple[tuple[Option, object], ...]:
    """Each row with its value in `options`, in table order. The table is derived from the fields, so this
    is the one place a field is read by its row's key; callers compare and show values through it."""
    return tuple((row, getattr(options, row.key)) for row in OPTIONS)


def changed_options(old: Options, new: Options) -> tuple[Option, ...]:
    """The rows whose values differ from `old` to `new` (a reload's changes; a restart option's pending one)."""
    pairs = zip(option_values(old), option_values(new), strict=True)
    return tuple(row for (row, before), (_, after) in pairs if before != after)
