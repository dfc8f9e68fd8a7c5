"""Every default and tunable of Live Memory, grouped and commented. No logic lives here.

User-facing options resolve env (`LIVE_MEMORY_<NAME>`) > config.json > the default below; the
option table itself is in `config.py`. Internal knobs (not user options) are plain constants.
"""

from __future__ import annotations

from typing import Final

# --- server ------------------------------------------------------------------------------------
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7711
MCP_PATH = "/mcp"
SERVER_NAME = "live-memory"
# Header a plugin's .mcp.json sets to the session's project dir; the default `cwd` when omitted.
PROJECT_HEADER = "x-live-memory-project"
# Header an agent's MCP entry sets to the agent's name (the installers write it): some clients of a stateless
# MCP server send their own name only in `initialize`, never with a tool call.
AGENT_HEADER = "X-Live-Memory-Agent"
# The name `live-memory ask` gives its MCP client: /stats counts the command line's questions under it.
CLI_AGENT_NAME = "live-memory-cli"
# How long `serve` waits for an existing server's /health before deciding the port is foreign.
HEALTH_PROBE_TIMEOUT_S = 2.0
# `live-memory doctor`'s 1-token request to the model, sent by the server (POST /check): a dead endpoint fails
# within the provider's connect timeout, a slow one is reported once this passes.
DOCTOR_ROUND_TRIP_TIMEOUT_S = 30.0
# /health sends a no-op to the worker threads (file I/O, hashing); no answer within this long: "stuck".
HEALTH_WORKER_PROBE_S = 1.0
# Client connections open at once (also at most half the open-file limit); past it the longest-open idle
# one is closed. Requests beyond it while every connection is busy are answered 503.
MAX_CONNECTIONS = 1000
MIN_CONNECTIONS = 16
# A connection must send a complete request head within this long of opening (or of its last answer);
# an idle kept-alive connection is closed after KEEP_ALIVE_TIMEOUT_S.
REQUEST_HEADER_TIMEOUT_S = 10.0
KEEP_ALIVE_TIMEOUT_S = 5
# Largest request head (request line + headers) read before the connection is refused.
MAX_REQUEST_HEAD_BYTES = 16 * 1024
# Grace period on SIGTERM for running questions before they return best-effort answers.
SHUTDOWN_GRACE_S = 10.0
# After the requests are done, at most this long to write every workspace's snapshot.
# Temp files of interrupted writes older than this are removed at startup (a write takes milliseconds).
STALE_TEMP_FILE_AGE_S = 60.0
SHUTDOWN_FLUSH_DEADLINE_S = 20.0
# An answer is journaled before it returns (an append: it survives a kill); the snapshot that supersedes
# the journal (its file fsync-ed before its rename) is written this long after, once for every answer
# meanwhile. Until then a power loss may bring back the previous snapshot.
SNAPSHOT_WRITE_BEHIND_S = 1.0
# The directory's fsync (which only makes a rename survive a power loss; until then the previous file
# comes back) runs this long after a write on a background thread, once for all the writes meanwhile.
DIR_FSYNC_DELAY_S = 1.0
# Once the server has stopped, worker threads get at most this long (and no more than the grace period)
# before the process exits without them: a thread stuck on a FIFO or a hung mount must not keep it alive.
SHUTDOWN_THREAD_WAIT_S = 5.0
# Keep-alive comment on an idle MCP event stream (the SDK's own interval).
IDLE_STREAM_PING_S = 15.0
# Beyond the grace period, how long a stop waits for the last answers to be delivered before the
# server stops listening regardless (at most; a short grace gets a margin as short, at least 1 s).
SHUTDOWN_DRAIN_MARGIN_S = 5.0
# At shutdown, after the last answer is handed to the transport: time for its frames to be written
# before idle event streams end (their clients reconnect at once, which would fail the answer).
STREAM_SETTLE_S = 0.3

# --- questions ---------------------------------------------------------------------------------
# Soft per-question deadline: at this point the loop stops and returns its best answer so far.
# Kept under 60 s because TS-SDK MCP clients abort at 60 s unless configured otherwise.
DEFAULT_TIMEOUT_S = 50.0
MIN_TIMEOUT_S = 1.0
MAX_TIMEOUT_S = 600.0
MAX_ITERATIONS = 25
DEFAULT_MAX_ANSWER_TOKENS = 2048
MIN_ANSWER_TOKENS = 256
MAX_ANSWER_TOKENS = 16384
MAX_QUESTION_CHARS = 20_000
# Progress notifications keep MCP clients from idling out during a long answer.
PROGRESS_INTERVAL_S = 5.0
# Time reserved at the end of the soft deadline to turn partial work into an answer.
FINAL_ANSWER_RESERVE_S = 8.0
FORCE_EXPLORE_WHEN_COLD = True

# --- provider ----------------------------------------------------------------------------------
DEFAULT_PROVIDER = "anthropic"
# Per-request HTTP timeout for one provider call (the soft deadline bounds the whole question).
PROVIDER_REQUEST_TIMEOUT_S = 120.0
# Encoded history messages each provider keeps (the history repeats in every request); LRU beyond this.
WIRE_CACHE_MAX_BYTES = 32 * 1024 * 1024
# Encoded request heads (system prompt, tool schemas) each provider keeps: one or two per workspace in use.
WIRE_FRAGMENTS_KEPT = 16
PROVIDER_CONNECT_TIMEOUT_S = 10.0
# Retries inside the soft deadline for 429/529/5xx/connection errors (issue: security & faults).
PROVIDER_MAX_RETRIES = 2
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 8.0
ANTHROPIC_API_VERSION = "2023-06-01"

# --- subscription credential (zero-config fallback) ---------------------------------------------
OAUTH_ENABLED = True
OAUTH_REFRESH_ENABLED = False
OAUTH_CREDENTIALS_FILE = ".credentials.json"
OAUTH_BETA_HEADER = "oauth-2025-04-20"
OAUTH_TOKEN_URL = "https://console.anthropic.com/v1/oauth/token"
OAUTH_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
# Re-read the credential file this long before the recorded expiry.
OAUTH_EXPIRY_MARGIN_S = 60.0

# --- context window ----------------------------------------------------------------------------
CHARS_PER_TOKEN = 4.0
COMPACTION_THRESHOLD = 0.85
COMPACTION_FLOOR = 0.60
DISTILL_MIN_INTERVAL_S = 60.0
# The most recent Q&A pairs are never summarized, so the summary never sees recent questions.
COMPACTION_KEEP_RECENT_PAIRS = 2
# The directory tree may take at most this share of the context budget.
DIRECTORY_TREE_SHARE = 0.10
# Q&A history kept verbatim before the oldest exchanges fold into the ledger (see options.history_max_tokens),
# and the share of it a fold goes down to (the two most recent exchanges always stay). Every request re-reads
# the history, and each fold rewrites the cached prompt after the ledger once, so deep, rare folds cost less
# than shallow, frequent ones. Measured by bench/session_bill.py: folding to 0.15 instead of 0.6 cut the
# memory's spend 9% on seven Django rows (0-12% each); with it, over all 56 rows, 8.5k kept every row at or
# under the subagent's cost per question, with the least spend of 7k, 8.5k and 10k (10k left one at 1.01).
HISTORY_MAX_TOKENS = 8_500
HISTORY_FLOOR = 0.15
# What the history keeps of each answer (kept_answer.py): its lead, to a paragraph break or this many
# characters, and the citations of the rest; 0 keeps answers whole. The agent has the full answer; each kept
# character is written to the cache once and read back by every later request until it folds. Measured by
# bench/session_bill.py: 200 instead of 400 cut the memory's spend 2.5-6% on every row of 12 (the first line
# alone, at most 0.5% more), with no more reads or rounds.
HISTORY_ANSWER_CHARS = 200
# The tree is re-read with every request: above this it shows directories with file counts and the
# model lists the rest with Glob/find_paths when it needs to (measured by bench/session_bill.py).
DIRECTORY_TREE_TOKENS = 2_000
# ...unless the prompt's head (instructions, tool schemas, tree) would then be shorter than the model's minimum
# cacheable prefix (4,096 tokens on Haiku 4.5): its own breakpoint is then never written, so until the ledger
# and history behind it pass the minimum (a young memory, and again after each compaction) every question pays
# for the head in full. The tree then grows (when the repository has more to show) to this share above that
# minimum, the margin for the token estimate. Measured by bench/session_bill.py on seven Django rows: growing
# the tree to just clear the minimum cut the memory's spend 3.8% (1.4-12.3% per row); 600 tokens more, 2.7%.
CACHE_MIN_MARGIN = 1.05
# When even the whole tree leaves the head under that minimum (a small repository), the head lists the files'
# top-level definitions after it, up to the minimum: a map the model can locate names in, read from the cache,
# where the same requests would otherwise send the whole prompt uncached until the history passes the minimum.
# Measured by bench/session_bill.py on this repository's rows (149 files: a 2.5k-token head): 8-15% less
# memory spend per question. At most OUTLINE_NAMES_PER_FILE names per file; files read at most OUTLINE_MAX_FILES
# per scan; below OUTLINE_MIN_CHARS of room, none.
OUTLINE_NAMES_PER_FILE = 12
OUTLINE_MAX_FILES = 500
OUTLINE_MIN_CHARS = 200
OUTLINE_CACHE_FILES = 20_000  # files whose names a process remembers by size and modification time
# The prompt names a file with its size (in the manifest, in notices of files the agents read) only from this
# size on, where it tells the model to read a part; below it a size costs every request and tells nothing.
FILE_SIZE_SHOWN_FROM_BYTES = 16_384
# Summaries (ledger) are capped so the ledger can never crowd out the window.
SUMMARY_MAX_TOKENS = 2048
MAX_TRANSCRIPT_CHARS = 400_000
# EMA weight of each new actual/estimated token ratio in self-calibration.
CALIBRATION_EMA_ALPHA = 0.2
CALIBRATION_MIN_RATIO = 0.5
CALIBRATION_MAX_RATIO = 2.0
# Anthropic looks back 20 blocks for an earlier cache entry; past this many new history blocks, the first
# request of a question also marks where the previous request's history ended.
LOOKBACK_ANCHOR_BLOCKS = 16
# How long a provider with explicit caching (Anthropic) keeps a prefix after the request that wrote or read it:
# 5 minutes, or an hour for breakpoints that ask for the long lifetime. A fold (summarizer.py) continues the
# conversation only while the prompt it repeats is this fresh; otherwise it sends just the retired material.
CACHE_TTL_S = 300.0
CACHE_LONG_TTL_S = 3600.0
# ...and only while reading that prompt from the cache costs less than sending the retired material again. A
# cached input token's price as a share of an uncached one's, where the model's prices are unknown: the
# common discount (Anthropic, OpenAI's GPT-5 family).
CACHE_READ_SHARE = 0.1
# Which cache breakpoints ask for the provider's 1-hour lifetime (see options.long_cache); measured by
# bench/session_bill.py: pauses of 5-60 min between questions then read the prefix instead of rewriting it.
LONG_CACHE: Final = "history"  # Final: typed as its literal, as the option's choices are
# A question's tool transcript is kept in history (and read from cache by the next question) only while
# it is at most this share of the window budget. Off by default: measured on bench/prefix_cache.py, keeping
# even small transcripts (2%) made compaction 1.5x as frequent and each question ~11% dearer, while the
# answers already carry what the tools found. Larger shares trade more compactions for fewer re-reads.
TRANSCRIPT_KEEP_SHARE = 0.0

# --- files and ingestion -----------------------------------------------------------------------
PASSIVE_INGESTION = True
# Which files keep their bytes (see options.hold_files); measured by bench/session_bill.py.
HOLD_FILES = "none"
# The files the memory's own model read whole are held while their expected re-reads cost more than holding them
# (read_hold.py; option hold_reads): measured by bench/session_bill.py on the content rows.
HOLD_READS = True
# The hot set (hot_set.py; hold_reads, hold_files "used"): at most this many tokens of held bytes...
HOT_SET_TOKENS = 24_000
# ...a file used once is taken to be as likely to be needed again as one used once in this many questions...
HOT_SET_PRIOR_QUESTIONS = 30.0
# ...its rate of use halves for every this many questions since its last use...
HOT_SET_HALF_LIFE_QUESTIONS = 8.0
# ...a file entering the set is expected to stay about this many questions (until a compaction re-chooses)...
HOT_SET_HORIZON_QUESTIONS = 10.0
# ...and a question sends about this many requests, each carrying every held file (until measured: a running mean
# with this weight on each new question).
HOT_SET_REQUESTS_PER_QUESTION = 2.0
REQUESTS_EMA_ALPHA = 0.2
# A citation `path:first-last` spanning this many lines or more names a file, not lines to hold.
CITED_LINES_MAX_LINES = 200
# The code names a question mentions are looked up before the model sees it (question_names.py), at most
# this many per question (0: none); measured by bench/session_bill.py: a "where" question then takes one
# request, and the others read only the lines they need without a search round.
QUESTION_NAMES_MAX = 4
# A question about files or directories as a whole ("Walk me through `cli.py`", "How is expiry handled in
# `auth/`?") gets the files read before the model sees it (pre_read.py), at most this many files and tokens
# (past that, a directory's matching files are named instead): reading them is the model's first step anyway, and
# a round saved reads the whole cached prompt once less. Measured by bench/session_bill.py on the content rows:
# 25,000 tokens (what one Read returns in Claude Code) instead of 12,000 cut the memory's spend 0-1.6% per row.
PRE_READ_MAX_FILES = 4
PRE_READ_TOKENS = 25_000
PRE_READ_MAX_LINES = 20_000  # a file read ahead is read whole, not in the Read tool's default window
# A file a question names that is too long to read ahead is summed up in the hint instead (file_summary.py): its
# docstring's first paragraph (cut at this many characters), at most this many imports and definitions.
SUMMARY_DOC_CHARS = 300
SUMMARY_IMPORTS_MAX = 15
SUMMARY_DEFINITIONS_MAX = 40
PASSIVE_MAX_FILE_BYTES = 256 * 1024
PRELOAD_MAX_TOTAL_BYTES = 2 * 1024 * 1024
NOTIFY_MAX_BODY_BYTES = 8 * 1024 * 1024
NOTIFY_MAX_EVENTS = 500
# A change event for a file we ourselves just received as a tee within this window is an echo.
ECHO_GRACE_S = 2.0
WATCH_ENABLED = True
WATCH_DEBOUNCE_MS = 200
# Directories watched per workspace at most (one inotify watch each; the kernel's historical default is 8,192
# per user): the directories of the files the memory used most recently first, then the others, the shallow ones
# first, up to nine tenths of it (the rest is room for directories created later); past it, hooks + hash
# re-validation keep the others current. Watches are added in groups of WATCH_GROUP_DIRECTORIES (the native watcher
# holds the GIL while it adds a group's, ~17 us per directory); a directory created later gets a group of its own,
# and beyond WATCH_MAX_GROUPS groups the small ones are merged (their directories only, never the whole tree).
WATCH_MAX_DIRECTORIES = 4_000
WATCH_GROUP_DIRECTORIES = 1_000
WATCH_MAX_GROUPS = 8
# A failed watcher restarts after this long, doubling up to the maximum.
WATCH_RESTART_DELAY_S = 1.0
WATCH_RESTART_MAX_DELAY_S = 60.0
# One wait for file events returns after this long without any (so a stop is noticed), and groups events
# arriving within a step of each other.
WATCH_POLL_MS = 5_000
WATCH_STEP_MS = 50

# --- workspaces and admission ------------------------------------------------------------------
CONCURRENCY_MODE = "parallel"
MAX_PARALLEL_QUERIES = 4
MAX_WAITING_QUERIES = 16
# A busy answer tells the caller to retry after this long.
BUSY_RETRY_AFTER_S = 5.0
# Share of the soft deadline a question may spend waiting for admission.
ADMISSION_WAIT_SHARE = 0.5
CANONICALIZE_WORKSPACE = True
REPO_ROOT_MODE = "nearest"
SHARE_WORKTREES = True
MAX_LOADED_WORKSPACES = 32
# Observed (teed/preloaded) file bytes held in memory across all workspaces; past it, LRU bytes are shed.
MAX_OBSERVED_BYTES = 256 * 1024 * 1024
ASYNC_TOOLS = False
JOB_TTL_S = 900.0
MAX_JOBS = 256

# An earlier answer to the same need (the files, directory and names asked about, not the exact words), whose files
# are unchanged, is given again with no model call (answer_reuse.py); a workspace keeps the newest answer to each of
# this many needs (the least recently asked go first; an answer is at most max_answer_tokens).
REUSE_ANSWERS = True
ANSWERS_KEPT = 256
# An earlier answer about the same things answers a question whose every topic word was one of the earlier
# question's; a word sharing its first this many letters or more with one of them counts as it ("failures", "fails").
TOPIC_PREFIX_CHARS = 4
# What the teammates' questions ask about (answer_reuse.py), worked out once per question, for so many questions.
TEAM_ASKED_KEPT = 4096

# The files the prompt names as seen (the frozen block's "Files you have seen", and a delta's list of the files the
# agents read or edited) take at most this share of the prompt's head (system prompt and tree; at least
# SEEN_FILES_MIN_CHARS): the most recently used first, the others counted. They stay known and re-validated, found
# again through the tree, find_paths and the symbol index; each costs ~55 characters in every request otherwise, so
# 600 files read cost a 32,000-character list. Bounded so that the first prompt after any number of reads stays
# within a tenth of the prompt without them (bench/scale_bench.py).
SEEN_FILES_SHARE = 0.08
SEEN_FILES_MIN_CHARS = 500
# Files whose lookups (find_symbol) a window remembers as the grounds of what it learns (newest kept).
LOOKED_UP_MAX = 2000
# The asking agent's name (its MCP client info, else AGENT_HEADER) is kept for /stats up to this many characters.
MAX_AGENT_NAME_CHARS = 64

# --- a team's knowledge (team_sync.py; the store's own limits are under "team store") -------------
# Reading a checkout's repository identity (two git calls, once per workspace).
REPO_IDENTITY_TIMEOUT_S = 5.0
# A first load waits at most this long for the team's facts to be pulled (in parallel with the tree scan),
# so a new checkout starts from what the team knows; a slow store costs the first question this, at most.
TEAM_LOAD_WAIT_S = 0.5
# The push queue on disk: at most this many facts (the oldest go first past it), taken this many at a time,
# retried after this long (doubling up to the maximum) while the store is down.
TEAM_QUEUE_MAX_FACTS = 20_000
TEAM_PUSH_BATCH = 500
TEAM_RETRY_S = 5.0
TEAM_RETRY_MAX_S = 300.0
# Questions and answers stay on this machine unless the user shares them (team_share_answers): then an answer
# grounded on files travels with its question, and a teammate's server with the same bytes answers the same
# question from it, without a model call. A question is the same when it matches after case and whitespace
# are folded.
TEAM_SHARE_ANSWERS = False
# Authors whose facts and answers this server uses (team_trust); empty: every author of the store, each shown
# by the role the database proves wrote the row.
TEAM_TRUST: tuple[str, ...] = ()
# Team facts take at most this much of the ledger (newest first); past it the ledger sheds them before its own.
TEAM_FACTS_MAX_TOKENS = SUMMARY_MAX_TOKENS // 2
# An answer about who uses a name is shared only when it rests on every file that mentions the name: found by
# a search of the whole checkout, at most this many files (more, or a search cut short: not shared).
TEAM_USES_MAX_FILES = 100

# --- operations --------------------------------------------------------------------------------
KEEP_WARM = False
# How often the keep-warm loop looks for workspaces due for a ping.
KEEP_WARM_CHECK_S = 15.0
# Pings stop for a workspace not asked anything for this long (its cache is not worth paying for).
KEEP_WARM_MAX_IDLE_S = 1800.0
LOG_LEVEL = "info"
# The status page shows the text of recent questions only when the user turns this on.
STATUS_SHOW_QUESTIONS = False
# Recent questions kept in memory per workspace for the status page (never persisted), and how many it shows.
RECENT_QUESTIONS_KEPT = 20
RECENT_QUESTIONS_SHOWN = 5
# Answer latencies (server-wide) kept for the p50/p95 on the status page.
RECENT_LATENCIES_KEPT = 1000
# Buckets (seconds) of the answer-latency histogram on /metrics.
LATENCY_BUCKETS_S: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0)
LOG_FILE_MAX_BYTES = 10 * 1024 * 1024
LOG_FILE_BACKUPS = 3
# The same log message (logger, level, template) is written at most this many times per window; the rest
# are counted and the count is logged with the next one let through.
LOG_REPEAT_BURST = 5
LOG_REPEAT_WINDOW_S = 60.0

# Child processes (ripgrep, git) running at once; further tool calls wait for a slot.
MAX_CONCURRENT_SUBPROCESSES = 8

# --- tools (owned by the tools package) --------------------------------------------------------
MAX_TOOL_OUTPUT_BYTES = 200_000
# Credential files kept out of the model's context: listed as "[withheld: secret]", refused by Read,
# never searched by Grep, diffs hidden in git_search. Case-insensitive. A pattern without "/" matches a
# file or directory name at any depth; with "/" it matches trailing path components (".aws/credentials"
# also matches "home/.aws/credentials"); a leading "/" anchors it at the workspace root. User option:
# secret_globs (replaces this list).
DEFAULT_SECRET_GLOBS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "credentials.json",
    "client_secret*.json",
    "service-account*.json",
    ".aws/credentials",
    ".docker/config.json",
    ".kube/config",
    "*.tfstate",
    "*.tfstate.backup",
)
# Wall-clock cap for one tool subprocess (rg, git); the question's soft deadline bounds the whole loop.
TOOL_SUBPROCESS_TIMEOUT_S = 20.0
# Bytes of stderr kept from a tool subprocess (only its first lines ever reach the model).
TOOL_STDERR_MAX_BYTES = 64 * 1024
# Path hygiene: longer inputs are refused before touching the filesystem (PATH_MAX / NAME_MAX).
MAX_PATH_CHARS = 4096
MAX_PATH_COMPONENT_BYTES = 255
# A file whose first bytes contain NUL is binary (same rule as git and ripgrep).
BINARY_SNIFF_BYTES = 8192
# Files are hashed by streaming this many bytes at a time, so memory stays flat for any file size.
HASH_CHUNK_BYTES = 1024 * 1024
# The tools fingerprint (SHA-256) a file they read only up to this size; a larger file is read but not
# recorded as read (hashing a multi-gigabyte log on every paged Read would cost seconds of CPU).
TOOL_HASH_MAX_BYTES = 256 * 1024 * 1024
# Read: default window and per-line cap, as in Claude Code's Read.
READ_DEFAULT_LINES = 2000
READ_MAX_LINE_CHARS = 2000
# Read counts a file's total lines only up to this size; past it, it says "the file continues".
READ_COUNT_LINES_MAX_BYTES = 32 * 1024 * 1024
# Grep: default/maximum number of output entries (lines, files or counts).
GREP_DEFAULT_HEAD_LIMIT = 200
GREP_MAX_HEAD_LIMIT = 5000
# Grep: a matching line longer than this many bytes prints as "[Omitted long matching line]"
# (ripgrep's --max-columns; minified files would otherwise flood the output).
GREP_MAX_COLUMNS = 500
# Raw subprocess output read before a search or listing is cut short (protects memory and the loop).
GREP_MAX_RAW_BYTES = 16 * 1024 * 1024
LISTING_MAX_RAW_BYTES = 64 * 1024 * 1024
# Glob / find_paths: default and maximum entries.
GLOB_DEFAULT_LIMIT = 200
FIND_PATHS_DEFAULT_LIMIT = 200
LISTING_MAX_LIMIT = 5000
# get_changed_files: entries shown.
CHANGED_FILES_LIMIT = 500
# git_search: commits shown (default / maximum), and caps on each commit's message and patch.
GIT_SEARCH_DEFAULT_COUNT = 10
GIT_SEARCH_MAX_COUNT = 50
GIT_MESSAGE_MAX_CHARS = 4000
GIT_PATCH_MAX_CHARS = 20_000
GIT_MAX_RAW_BYTES = 16 * 1024 * 1024
# Directory tree: raw `git ls-files` output read at most (a ~1M-file monorepo) and its time cap.
TREE_MAX_LISTING_BYTES = 256 * 1024 * 1024
TREE_TIMEOUT_S = 30.0
# Directory tree without git: the walk stops after this many files (then says the listing was cut).
TREE_MAX_WALK_FILES = 1_000_000
# A stopping service waits at most this long for the children of its cancelled tool work (killed already) to be
# reaped, so that no child outlives the event loop unwaited for.
SUBPROCESS_REAP_WAIT_S = 5.0
# A checkout's tree is kept on disk for the next start (tree_cache.py) when it has at most this many directories
# (each one's stamp is checked then: a stat each).
TREE_CACHE_MAX_DIRECTORIES = 100_000

# --- team store (team_store.py; off unless the team_store option names a postgresql:// URL) ------------
# Connections one server opens to the store at most: a whole team's servers share one PostgreSQL.
TEAM_STORE_POOL_MAX = 4
# Every call to the store (connecting included) fails after this long: a slow store must never hold a
# question or a compaction. The server is told too (statement_timeout), so it stops work nobody awaits.
TEAM_STORE_TIMEOUT_S = 2.0
# A schema migration may rewrite the table or wait for another server's migration: bounded apart.
TEAM_STORE_MIGRATE_TIMEOUT_S = 30.0
# Facts one pull brings at most (newest confirmation first).
TEAM_STORE_PULL_LIMIT = 2000
# Facts one upsert statement carries; a longer push sends several, in one transaction.
TEAM_STORE_PUSH_BATCH = 500
# On close, calls abandoned at their deadline get this long to hang up, and the pool as long to close.
TEAM_STORE_CLOSE_S = 1.0
# A row is checked on its own as it arrives (team_rows.py) and refused past these: a fact is one line of dense
# prose (the ledger's own are a few hundred characters; the whole ledger is SUMMARY_MAX_TOKENS); an answer is
# held to this server's max_answer_tokens at this many characters a token (a token is rarely longer: an answer
# its model could have written fits); grounds name at most this many files, each path at most this long. The
# store sends no more than one character past a cap, so a 10 MB row costs a pull nothing.
TEAM_FACT_MAX_CHARS = 1000
TEAM_ANSWER_CHARS_PER_TOKEN = 8
TEAM_SOURCES_MAX_PATHS = 256
TEAM_PATH_MAX_CHARS = 1024
TEAM_SOURCES_MAX_CHARS = TEAM_SOURCES_MAX_PATHS * (TEAM_PATH_MAX_CHARS + 72)
TEAM_REPO_MAX_CHARS = 512
TEAM_NAME_MAX_CHARS = 128  # the writer's own user_name and machine
TEAM_AUTHOR_MAX_CHARS = 63  # a PostgreSQL role name (NAMEDATALEN - 1)
# Refused rows are logged once each; the keys remembered for that are bounded (the count goes on).
TEAM_REFUSED_KEYS_MAX = 10_000
# Freshness (team_listen.py): each row written is announced by the store (LISTEN/NOTIFY) and fetched at once;
# a listener idle this long pings its connection (a network that swallows packets is found out), and every
# workspace pulls everything this often anyway (what a listener that was away missed).
TEAM_LISTEN_PING_S = 10.0
TEAM_PULL_INTERVAL_S = 60.0
# Rows one announcement batch fetches at most (more were announced: everything is pulled instead).
TEAM_FETCH_MAX_IDS = 500
# The roles `live-memory team-setup` makes: the tables' owner (never a teammate's login) and the group every
# teammate's role joins (read everything, write only its own rows).
TEAM_OWNER_ROLE = "live_memory_owner"
TEAM_MEMBER_ROLE = "live_memory_team"

# --- cost --------------------------------------------------------------------------------------
# Background model calls (distillation, keep-warm) stop once this share of a spend cap is used.
BACKGROUND_STOP_SHARE = 0.8
# Estimated tokens saved (/stats): cache reads cost about a tenth of uncached input, so they count a tenth
# of Live Memory's own spend.
CACHE_READ_WEIGHT = 0.1

# --- file cards and symbol lookup (cards.py, symbol_index.py, tools/symbols.py) ----------------------
# A definition's one-line signature is cut at this many characters; it is read up to the body over at
# most this many lines (a long parameter list), else only its first line is shown.
CARD_SIGNATURE_MAX_CHARS = 100
CARD_SIGNATURE_MAX_LINES = 8
# A larger file gets a pattern outline instead of a parse (a minified bundle, a generated table).
CARD_PARSE_MAX_BYTES = 1024 * 1024
# Per card: definitions kept, and distinct identifiers kept for "where is X used".
CARD_MAX_DEFINITIONS = 2000
CARD_MAX_REFERENCES = 5000
# find_symbol: definitions and using files shown, files the workspace scan reads and outlines when the
# index does not know the name, and the longest name accepted. Definitions: the preferred files' first (the
# question's and those the memory used), then the rest; each question's lookups show them in its hint, so
# every listed line is paid for once per question. Measured by bench/session_bill.py on 16 rows: 6 instead
# of 20 cut the memory's spend 0-3.8% per row, with no more reads or rounds.
SYMBOL_MAX_DEFINITIONS = 6
SYMBOL_MAX_USE_FILES = 30
SYMBOL_SCAN_MAX_FILES = 40
# find_symbol remembers which paths found by its searches may be shown (a check of the jail's policy, a few
# microseconds each) for this many paths per checkout: `main` at 55,000 files is found in some 10,000 files.
SHOWN_PATHS_KEPT = 200_000
SYMBOL_NAME_MAX_CHARS = 200
# find_symbol with code: the lines of a name's definitions come with the answer while there are at most this
# many definitions, each at most this many lines (a longer one is shown by its range only). Measured by
# bench/session_bill.py: 120 instead of 80 lines spared the strict model its last re-reads (an 84-line class it
# read again each time it was asked about) and cost no row anything.
SYMBOL_CODE_MAX_DEFINITIONS = 2
SYMBOL_CODE_MAX_LINES = 120
# A name defined in more places than SYMBOL_CODE_MAX_DEFINITIONS still comes with the code of its definitions in
# the files the memory used most recently (its reads and the agents' tees), at most this many files considered:
# asked again about `_view_wrapper`, it is most likely the one it worked with (measured by bench/session_bill.py).
SYMBOL_PREFER_MAX_PATHS = 64
# The symbol index (symbol_store.py, tools/index_keeper.py): where each name is defined and which files mention it,
# kept per checkout in SQLite beside the snapshot so that a lookup reads it instead of running ripgrep over the
# workspace. Built at a workspace's first load by a child process at this lower priority (os.nice), never waited
# for: the scan answers until it is ready. A file's first SYMBOL_INDEX_MAX_FILE_BYTES are indexed (the scan searches
# a larger one whole; code files are far smaller). A build writes this many files per transaction.
SYMBOL_INDEX = True
# It starts once the workspace's first answer is out (its work beside that answer would slow it on two cores), or
# after this long without one.
SYMBOL_INDEX_START_WAIT_S = 30.0
SYMBOL_INDEX_MAX_FILE_BYTES = 16 * 1024 * 1024
SYMBOL_INDEX_NICE = 10
SYMBOL_INDEX_BATCH_FILES = 500
# A build that takes longer than this is stopped (the scan keeps answering; the next load tries again).
SYMBOL_INDEX_BUILD_TIMEOUT_S = 3600.0
# Changed files (/notify, the watcher, a stamp that moved) are re-indexed in the server, this many at most at once
# (each ~1-10 ms), gathered for this long first; more at once (a checkout of another branch) go to the child process.
SYMBOL_INDEX_UPDATE_MAX_FILES = 300
SYMBOL_INDEX_DEBOUNCE_S = 0.2
# Before a lookup uses a file's entries their stamps are checked (a stat each); when more than this many files it
# would show changed, it scans instead and the index catches up in the background.
SYMBOL_INDEX_CHECK_MAX_CHANGED = 32
# Replaced versions' postings stay in the index's word table until a rebuild, which comes once they outnumber the
# files this many times.
SYMBOL_INDEX_ORPHAN_RATIO = 1.0
