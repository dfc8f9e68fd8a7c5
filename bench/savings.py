"""Savings model: what 100 questions over a real repository cost with Live Memory vs with no memory.

Method
    A scripted workload of 100 questions about the Django 5.1.4 sdist repository (built once under
    bench/.cache/ by `bench.tools_bench.django_repo`, copied per run) in 5 sessions of 20 questions.
    Each question is about a topic of 1-4 real Django modules (0.7-26 KiB each); topics recur within and
    across sessions (each session has a theme, follow-up questions return to a recent topic) and some
    are new. Between two questions the calling agent does its own work on the previous answer's files:
    it reads some of them (the hooks tee those reads to `POST /notify` with their content) and now and
    then edits one (the file is modified on disk and a `change` event is posted; half the time the agent
    re-reads it, a tee of the new bytes). The server is restarted between sessions (leave and re-enter
    `live_server(...)` with the same data dir).

    The same workload is replayed through two arms, each against its own `live_memory.testing.llm_server.FakeLLM`
    with the same cache rules, sharing one virtual clock (see Time below):
    (a) Live Memory: the real server under uvicorn, asked through the official MCP client.
    (b) No memory: every question starts a fresh explorer (the way a fresh subagent works), built here
        with the official SDK (`anthropic`; `openai` for DeepSeek): Live Memory's own system prompt and tool
        schemas + the question; the model reads the files the answer needs (`Read` tool calls, one parallel
        turn); the tool results are the exact bytes Live Memory's Read returns (`live_memory.tools.Toolbox`);
        then the answer. On Anthropic only the system block carries a breakpoint: an explorer's prompt
        never recurs, so marking its tail would only add 1.25x write charges (a baseline-friendly choice).
        It never searches before reading (it is handed the right files), which also favours the baseline.

    One scripted model answers both arms: it calls Read (in one parallel turn) for each topic file whose
    content is not already in the prompt (a held observation block `### path`, an observation delta, or
    an earlier Read in the same request; a later CHANGED/DELETED notice for the file voids it), then
    answers with a deterministic ~150-300-token text naming the topic's paths: the same answer in both
    arms. Summarizer requests (recognised by `NEUTRAL_SUMMARY_SYSTEM_PROMPT`) get the ledger's changes, one
    new fact per line naming paths. So the savings come from the mechanics only: what is re-sent, what is held,
    what is cached.

    Two pricing/caching setups: Anthropic Haiku 4.5 (`claude-haiku-4-5`, fake "anthropic" rules: explicit
    breakpoints, 4096-token minimum, 5-minute TTL) and DeepSeek (`deepseek-flash` over the OpenAI protocol,
    fake "deepseek" rules: automatic prefix caching in 64-token units, TTL 1 hour here). Costs use
    `live_memory.providers.pricing.cost_usd` on the usage the fake reported for every request (including
    Live Memory's summarizer calls). `max_context_tokens` = 64k so that compaction runs during the workload;
    `distill_min_interval_s` = 0 (a real session spreads these questions over hours); the OS watcher is
    off (the change events come from the hooks' path only).

    Time: the fakes run on a virtual clock: 2 minutes between questions (within the 5-minute TTL) and 2
    hours between sessions (every cache entry has expired by the next session, in both arms).

Figures, per setup and per arm: prompt (input) tokens, cache-read share, output tokens, USD in total and
per question, and the break-even point: the question after which Live Memory's cumulative cost stays
below the baseline's ("never" if it ends above). Also the cost split by price component and by request
role, and the mean cost of a question by the number of files the model had to read. Per-question
(cumulative) cost series go to the JSON for the chart in docs/benchmarks.md.

Limits
    The model is scripted, so this measures the mechanics (what is re-sent and what is cached), not the
    quality of answers; a real model may read more or less than the topic files, trust its ledger and
    earlier answers (which this one never does: it re-reads whatever is not held verbatim), or explore
    with Grep first. Token counts are the fake's ceil(chars/4) per block, not a real tokenizer. The
    baseline is an idealised explorer (no search, no system-prompt growth, the minimum number of
    requests); a real fresh subagent usually has a much larger system prompt and tool list (which
    a provider would cache across subagents). Two product mechanics shape the result and are measured,
    not modelled: what Live Memory's own tools read is not kept for later questions (only a manifest
    entry and the answer text), and held (teed) file bytes are not persisted, so each restart starts
    without them. Prices: the table in `providers/pricing.py` (DeepSeek off-peak rates).

Run: `python -m bench.savings` (about a minute on 2 cores). Writes bench/results/savings.json.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import multiprocessing
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anthropic
import httpx2
import openai

from bench.common import (
    McpAsker,
    content_text,
    cumulative,
    first_index_staying_below,
    print_table,
    save_results,
    scripted_ledger,
    scripted_settings,
    summary_request,
    warn_if_busy,
)
from bench.tools_bench import django_repo
from live_memory.constants import COMPACTION_FLOOR, COMPACTION_THRESHOLD, DEFAULT_MAX_ANSWER_TOKENS
from live_memory.core.prompts import (
    HINT_HEADING,
    QUESTION_HEADING,
    SYSTEM_PROMPT,
    question_block,
)
from live_memory.core.records import Usage
from live_memory.providers.openai_compat import tool_to_openai
from live_memory.providers.pricing import cost_usd, price_for
from live_memory.testing.live_server import live_server
from live_memory.testing.llm_server import CacheRules, FakeLLM, RecordedRequest, Reply
from live_memory.tools import TOOL_SCHEMAS, Toolbox

NAME = "savings"
SEED = 20_251_201
SESSIONS = 5
PER_SESSION = 20
QUESTIONS = SESSIONS * PER_SESSION
BUDGET_TOKENS = 64_000
QUESTION_GAP_S = 120.0
SESSION_GAP_S = 2 * 3600.0
ANSWER_CHARS = (650, 1150)
FOLLOW_UP_SHARE = 0.3  # a question returns to one of the last 3 topics
TEE_SHARE = 0.75  # after an answer, the agent reads (tees) 1-2 of its files
EDIT_SHARE = 0.2  # ... and edits one of them
MAX_EXPLORER_TURNS = 6

METHOD = (
    "100 scripted questions about the Django 5.1.4 repository in 5 sessions of 20 (server restarted between "
    "sessions), each about a topic of 1-4 real modules; topics recur, some are new. Between questions the agent "
    "reads (tees to /notify) and sometimes edits (disk change + change event) the previous answer's files. Two "
    "arms against fake providers with the same cache rules and one virtual clock (2 min between questions, 2 h "
    "between sessions): (a) the real Live Memory server over MCP; (b) no memory: a fresh explorer per question "
    "(official SDK; Live Memory's system prompt and tools + the question, then Read tool calls whose results are "
    "the same bytes Live Memory's Read returns, then the answer). One scripted model serves both: it reads a "
    "topic file only when the prompt does not already hold its content, and gives the same answer in both arms. "
    "The model is scripted, so this measures the mechanics (what is re-sent and what is cached), not answer "
    "quality. Costs: live_memory.providers.pricing on the usage the fake reported for every request, Live "
    "Memory's summarizer calls included."
)
LIMITS = (
    "Token counts are the fake's ceil(chars/4) per block, not a real tokenizer.",
    "The scripted model never trusts its ledger or earlier answers: it re-reads every file not held verbatim.",
    "The baseline explorer is idealised (handed the right files, no search, a small system prompt, the minimum "
    "number of requests, breakpoint only on its system block); a real subagent sends more.",
    "Measured product mechanics, not modelled: files Live Memory's own tools read are not kept for later questions "
    "(a manifest entry and the answer text remain), and held (teed) file bytes are not persisted across restarts.",
    "DeepSeek is simulated as plain prefix caching (64-token units, 1 h TTL), priced at off-peak rates.",
)


@dataclass(frozen=True)
class Setup:
    name: str
    label: str
    protocol: Literal["anthropic", "openai"]
    rules: CacheRules
    provider: str
    model: str
    cache_ttl_s: float


SETUPS = (
    Setup("anthropic", "Anthropic Haiku 4.5", "anthropic", "anthropic", "anthropic", "claude-haiku-4-5", 300.0),
    Setup("deepseek", "DeepSeek flash", "openai", "deepseek", "deepseek", "deepseek-flash", 3600.0),
)


# -- the workload ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Topic:
    subject: str
    files: tuple[str, ...]


TOPICS: dict[str, Topic] = {
    "handlers": Topic(
        "the request/response cycle in the core handlers",
        ("django/core/handlers/base.py", "django/core/handlers/wsgi.py", "django/core/handlers/exception.py"),
    ),
    "urls": Topic("URL resolution and reverse()", ("django/urls/base.py", "django/urls/conf.py")),
    "csrf": Topic("CSRF protection", ("django/middleware/csrf.py", "django/views/decorators/csrf.py")),
    "middleware": Topic(
        "the common and security middleware",
        ("django/middleware/common.py", "django/middleware/security.py", "django/utils/deprecation.py"),
    ),
    "request": Topic("HttpRequest parsing (headers, host validation, GET/POST)", ("django/http/request.py",)),
    "response": Topic("HttpResponse and cookies", ("django/http/response.py", "django/http/cookie.py")),
    "shortcuts": Topic("render(), redirect() and get_object_or_404()", ("django/shortcuts.py",)),
    "sessions": Topic(
        "session storage",
        (
            "django/contrib/sessions/backends/base.py",
            "django/contrib/sessions/backends/db.py",
            "django/contrib/sessions/middleware.py",
        ),
    ),
    "login": Topic(
        "login, logout and authentication backends",
        ("django/contrib/auth/__init__.py", "django/contrib/auth/backends.py", "django/contrib/auth/middleware.py"),
    ),
    "hashers": Topic("password hashing", ("django/contrib/auth/hashers.py",)),
    "reset_tokens": Topic(
        "password-reset tokens and signing", ("django/contrib/auth/tokens.py", "django/core/signing.py")
    ),
    "auth_decorators": Topic(
        "login_required and permission checks",
        ("django/contrib/auth/decorators.py", "django/contrib/auth/base_user.py"),
    ),
    "password_validation": Topic("password validators", ("django/contrib/auth/password_validation.py",)),
    "cache": Topic(
        "the cache framework",
        (
            "django/core/cache/__init__.py",
            "django/core/cache/backends/base.py",
            "django/core/cache/backends/locmem.py",
        ),
    ),
    "view_cache": Topic(
        "per-view caching and cache headers", ("django/views/decorators/cache.py", "django/utils/cache.py")
    ),
    "templates": Topic(
        "template loading",
        (
            "django/template/loader.py",
            "django/template/engine.py",
            "django/template/backends/django.py",
            "django/template/loaders/cached.py",
        ),
    ),
    "template_response": Topic(
        "TemplateResponse and template contexts", ("django/template/response.py", "django/template/context.py")
    ),
    "lazy": Topic("lazy objects and cached_property", ("django/utils/functional.py",)),
    "transactions": Topic("transactions and atomic()", ("django/db/transaction.py", "django/db/utils.py")),
    "signals": Topic("signals", ("django/dispatch/dispatcher.py", "django/db/models/signals.py")),
    "managers": Topic("model managers", ("django/db/models/manager.py",)),
    "deletion": Topic("cascading deletes", ("django/db/models/deletion.py",)),
    "migrations": Topic(
        "applying migrations", ("django/db/migrations/executor.py", "django/db/migrations/recorder.py")
    ),
    "apps": Topic("the app registry", ("django/apps/registry.py", "django/apps/config.py")),
    "settings": Topic("settings loading", ("django/conf/__init__.py",)),
    "pagination": Topic("pagination", ("django/core/paginator.py", "django/views/generic/list.py")),
    "validators": Topic("field validators", ("django/core/validators.py",)),
    "generic_views": Topic(
        "class-based generic views", ("django/views/generic/base.py", "django/views/generic/edit.py")
    ),
    "timezone": Topic("time-zone handling", ("django/utils/timezone.py", "django/utils/dateparse.py")),
    "mail": Topic("sending e-mail", ("django/core/mail/__init__.py", "django/core/mail/message.py")),
    "commands": Topic("management commands", ("django/core/management/base.py",)),
    "checks": Topic("the system-check framework", ("django/core/checks/registry.py",)),
}

# Each session's theme; topics repeat across sessions (memory can help) and each session adds new ones.
THEMES: tuple[tuple[str, ...], ...] = (
    ("handlers", "urls", "csrf", "middleware", "request", "response", "shortcuts"),
    ("sessions", "login", "hashers", "reset_tokens", "auth_decorators", "csrf", "handlers", "password_validation"),
    ("cache", "view_cache", "templates", "template_response", "lazy", "response", "request"),
    ("transactions", "signals", "managers", "deletion", "migrations", "apps", "settings"),
    ("handlers", "login", "cache", "transactions", "pagination", "validators", "generic_views", "timezone", "mail"),
)

TEMPLATES: tuple[str, ...] = (
    "Where is the code for {subject}, and what calls into it?",
    "Walk me through {subject} step by step, naming the functions involved.",
    "Which settings change the behaviour of {subject}?",
    "What errors can come out of {subject}, and where are they handled?",
    "To customise {subject}, which class or hook should I override?",
    "How is {subject} exercised, and what are the edge cases?",
    "What does {symbol} do in the code for {subject}, and who uses it?",
    "Is there caching or lazy evaluation in {subject}; what invalidates it?",
)


@dataclass(frozen=True)
class Action:
    kind: Literal["tee", "edit"]
    path: str


@dataclass(frozen=True)
class Step:
    index: int
    session: int
    topic: str
    files: tuple[str, ...]
    question: str
    actions: tuple[Action, ...]  # the agent's own work before this question (tees and edits, in order)


def symbols_of(repo: Path, files: Iterable[str]) -> list[str]:
    names: list[str] = []
    for rel in files:
        text = (repo / rel).read_text(encoding="utf-8")
        names += re.findall(r"^(?:class|def) ([A-Za-z]\w+)", text, re.M)
    return names


def build_script(repo: Path) -> list[Step]:
    """The deterministic workload (seeded): topics, questions and the agent's tees/edits."""
    rng = random.Random(SEED)
    steps: list[Step] = []
    asked: dict[str, int] = {}
    seen_questions: set[str] = set()
    for session, theme in enumerate(THEMES):
        recent: list[str] = []
        for k in range(PER_SESSION):
            index = session * PER_SESSION + k
            follow_up = bool(recent) and rng.random() < FOLLOW_UP_SHARE
            name = rng.choice(recent[-3:]) if follow_up else rng.choice(theme)
            recent.append(name)
            topic = TOPICS[name]
            actions: list[Action] = []
            if k > 0:  # events reach a loaded workspace only: not before a session's first question
                previous = steps[-1].files
                if rng.random() < TEE_SHARE:
                    read = rng.sample(previous, min(len(previous), rng.choice((1, 2))))
                    actions += [Action("tee", p) for p in read]
                    if rng.random() < EDIT_SHARE:
                        edited = rng.choice(read)
                        actions.append(Action("edit", edited))
                        if rng.random() < 0.5:
                            actions.append(Action("tee", edited))  # the agent re-reads what it edited
            count = asked.get(name, 0)
            asked[name] = count + 1
            symbols = symbols_of(repo, topic.files) or ["the module"]
            question = ""
            for attempt in range(len(TEMPLATES) * 4):
                template = TEMPLATES[(count + attempt) % len(TEMPLATES)]
                symbol = symbols[(count * 7 + attempt * 3) % len(symbols)]
                question = template.format(subject=topic.subject, symbol=symbol)
                if question not in seen_questions:
                    break
                question = f"{question} (about {symbol})"
                if question not in seen_questions:
                    break
            assert question not in seen_questions, question
            seen_questions.add(question)
            steps.append(Step(index, session, name, topic.files, question, tuple(actions)))
    return steps


ANSWER_SENTENCES: tuple[str, ...] = (
    "{a} defines {sa}; it is reached from {b} through a module-level import.",
    "The entry point is {sa} in {a}, which delegates the {word} step to {sb} in {b}.",
    "{sa} ({a}) keeps per-instance state that {sb} ({b}) resets after each {word} call.",
    "Configuration comes from django/conf/__init__.py; {a} reads it lazily when {sa} first runs.",
    "Errors surface from {sb} in {b}; {a} turns them into the exception the caller sees.",
    "To customise it, subclass {sa} from {a} and override the {word} hook; {b} calls it.",
    "{b} only consumes {sa}; the behaviour itself lives in {a}.",
)
WORDS = ("resolve", "validate", "prepare", "render", "clean", "load", "bind", "process", "serialize")


def answer_text(step: Step, symbols: Sequence[str]) -> str:
    """A deterministic answer of ~150-300 tokens naming the topic's paths and symbols."""
    rng = random.Random(SEED * 31 + step.index)
    target = rng.randint(*ANSWER_CHARS)
    names = list(symbols) or ["the module"]
    lines = [f"Short answer: this lives in {', '.join(step.files)}."]
    size = len(lines[0])
    while size < target:
        a, b = rng.choice(step.files), rng.choice(step.files)
        sentence = rng.choice(ANSWER_SENTENCES).format(
            a=a, b=b, sa=rng.choice(names), sb=rng.choice(names), word=rng.choice(WORDS)
        )
        lines.append(f"- {sentence}")
        size += len(sentence) + 3
    return "\n".join(lines)


# -- the scripted model ------------------------------------------------------------------------------------
_CONTENT = re.compile(r"^### (\S+)\n```", re.M)
_STALE = re.compile(r"^- (\S+): (?:CHANGED|DELETED)", re.M)
Segment = tuple[Literal["text", "read"], str]


def is_summary(body: dict[str, Any]) -> bool:
    return summary_request(body) is not None


def segments(body: dict[str, Any]) -> list[Segment]:
    """The prompt in order, as text chunks and Read calls (either protocol)."""
    out: list[Segment] = []
    system = body.get("system")
    if isinstance(system, list):
        out += [("text", str(b.get("text", ""))) for b in system if isinstance(b, dict)]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "text":
                    out.append(("text", str(block.get("text", ""))))
                elif block.get("type") == "tool_use" and block.get("name") == "Read":
                    out.append(("read", str((block.get("input") or {}).get("file_path", ""))))
        elif isinstance(content, str) and message.get("role") != "tool":
            out.append(("text", content))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") == "Read":
                arguments = json.loads(function.get("arguments") or "{}")
                out.append(("read", str(arguments.get("file_path", ""))))
    return out


def held_files(body: dict[str, Any]) -> set[str]:
    """Files whose current content the prompt shows (the last word on each path wins)."""
    state: dict[str, bool] = {}
    for kind, value in segments(body):
        if kind == "read":
            state[value] = True
            continue
        marks = [(m.start(), m.group(1), True) for m in _CONTENT.finditer(value)]
        marks += [(m.start(), m.group(1), False) for m in _STALE.finditer(value)]
        for _, path, present in sorted(marks):
            state[path] = present
    return {path for path, present in state.items() if present}


def current_question(body: dict[str, Any]) -> str | None:
    """The question being answered: the last user text that starts with the question heading."""
    heading = QUESTION_HEADING + "\n"
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        texts = (
            [content] if isinstance(content, str) else [content_text([b]) for b in content or [] if isinstance(b, dict)]
        )
        for text in texts:
            if text.startswith(heading):
                return text[len(heading) :].split("\n\n" + HINT_HEADING, 1)[0].strip()
    return None


class ScriptedModel:
    """The fakes' responder (both arms): read what is not held, then answer; summarize ledgers."""

    def __init__(self, steps: Sequence[Step], symbols: dict[str, list[str]]) -> None:
        self.by_question = {s.question: s for s in steps}
        self.symbols = symbols
        self.unknown = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body
        if is_summary(body):
            return Reply.text(scripted_ledger(summary_request(body) or ""))
        question = current_question(body)
        step = self.by_question.get(question or "")
        if step is None:
            self.unknown += 1
            return Reply.text("(no scripted question found)")
        held = held_files(body)
        missing = [p for p in step.files if p not in held]
        if missing:
            return Reply.tool_calls([("Read", {"file_path": p}) for p in missing])
        return Reply.text(answer_text(step, self.symbols[step.topic]))


# -- accounting --------------------------------------------------------------------------------------------
def usage_of(record: RecordedRequest) -> Usage:
    """The fake's usage for one request in Live Memory's normalised form (either endpoint)."""
    u = record.usage or {}
    if "cache_read_input_tokens" in u:
        return Usage(
            int(u.get("input_tokens") or 0),
            int(u.get("output_tokens") or 0),
            int(u.get("cache_read_input_tokens") or 0),
            int(u.get("cache_creation_input_tokens") or 0),
        )
    prompt = int(u.get("prompt_tokens") or 0)
    read = int(u.get("prompt_cache_hit_tokens") or (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(prompt - read, int(u.get("completion_tokens") or 0), read, 0)


@dataclass
class QuestionRecord:
    index: int
    session: int
    lm_range: tuple[int, int] = (0, 0)
    base_range: tuple[int, int] = (0, 0)
    lm_error: bool = False
    compaction: bool = False
    fill: float = 0.0
    notify_accepted: int = 0
    notify_ignored: int = 0
    reads_identical: int = 0
    reads_compared: int = 0


@dataclass
class ArmTotals:
    """One arm's usage and cost, per question and split by request role and by price component."""

    model: str
    requests: int = 0
    summarizer_requests: int = 0
    read_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    errors: int = 0
    per_question: list[float] = field(default_factory=list)
    reads_per_question: list[int] = field(default_factory=list)
    by_role: dict[str, Usage] = field(default_factory=dict)
    final_tool_loop_writes: int = 0  # cache writes of a question's last request after tool calls: never read

    def add_question(self, records: Sequence[RecordedRequest]) -> None:
        spent = 0.0
        reads = 0
        turns = [r for r in records if not is_summary(r.body)]
        for record in records:
            usage = usage_of(record)
            self.requests += 1
            self.errors += int(record.usage is None)
            self.usage = self.usage + usage
            spent += cost_usd(self.model, usage)
            if is_summary(record.body):
                self.summarizer_requests += 1
                role = "summarizer"
            else:
                role = "first request" if record is turns[0] else "tool-loop requests"
            self.by_role[role] = self.by_role.get(role, Usage()) + usage
            if record.reply is not None:
                reads += sum(1 for call in record.reply.calls if call.name == "Read")
        self.read_calls += reads
        self.reads_per_question.append(reads)
        if len(turns) > 1:
            self.final_tool_loop_writes += usage_of(turns[-1]).cache_write_tokens
        self.cost += spent
        self.per_question.append(spent)

    def _components(self, usage: Usage) -> dict[str, float]:
        price = price_for(self.model)
        if price is None:
            return {}
        return {
            "uncached_input": round(usage.input_tokens * price.input / 1e6, 6),
            "cache_read": round(usage.cache_read_tokens * price.cache_read / 1e6, 6),
            "cache_write": round(usage.cache_write_tokens * price.cache_write / 1e6, 6),
            "output": round(usage.output_tokens * price.output / 1e6, 6),
        }

    def figures(self) -> dict[str, Any]:
        u = self.usage
        prompt = u.prompt_tokens
        price = price_for(self.model)
        return {
            "requests": self.requests,
            "summarizer_requests": self.summarizer_requests,
            "read_calls": self.read_calls,
            "prompt_tokens": prompt,
            "uncached_input_tokens": u.input_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "cache_read_share": round(u.cache_read_tokens / prompt, 4) if prompt else 0.0,
            "output_tokens": u.output_tokens,
            "cost_usd": round(self.cost, 6),
            "cost_per_question_usd": round(self.cost / max(len(self.per_question), 1), 6),
            "cost_usd_by_component": self._components(u),
            "by_role": {
                role: {
                    "prompt_tokens": usage.prompt_tokens,
                    "cache_read_tokens": usage.cache_read_tokens,
                    "cache_write_tokens": usage.cache_write_tokens,
                    "output_tokens": usage.output_tokens,
                    "cost_usd": round(cost_usd(self.model, usage), 6),
                }
                for role, usage in sorted(self.by_role.items())
            },
            "final_tool_loop_cache_writes": {
                "tokens": self.final_tool_loop_writes,
                "usd": round(self.final_tool_loop_writes * (price.cache_write if price else 0.0) / 1e6, 6),
                "premium_over_uncached_usd": round(
                    self.final_tool_loop_writes * ((price.cache_write - price.input) if price else 0.0) / 1e6, 6
                ),
            },
            "summarizer_cost_usd": round(cost_usd(self.model, self.by_role.get("summarizer", Usage())), 6),
            "errors": self.errors,
            "questions_without_reads": sum(1 for n in self.reads_per_question if n == 0),
            "questions_by_reads": {
                str(n): self.reads_per_question.count(n) for n in sorted(set(self.reads_per_question))
            },
            "cost_per_question_by_reads_usd": self._by_reads(),
        }

    def _by_reads(self) -> dict[str, float]:
        """Mean cost of the questions that made n Read calls, by n (the model's work, priced)."""
        groups: dict[int, list[float]] = {}
        for reads, spent in zip(self.reads_per_question, self.per_question, strict=True):
            groups.setdefault(reads, []).append(spent)
        return {str(n): round(sum(v) / len(v), 6) for n, v in sorted(groups.items())}


def break_even(live_memory: Sequence[float], baseline: Sequence[float]) -> int | str:
    """The question number after which Live Memory's cumulative cost stays below the baseline's (0: from the
    start), or "never" when it ends at or above it. Both series are cumulative, one value per question."""
    after = first_index_staying_below(live_memory, baseline)  # below at question after+1 (1-based) and later
    return "never" if after is None else after


# -- running ---------------------------------------------------------------------------------------------
class VirtualClock:
    """The fakes' clock: questions 2 minutes apart, sessions 2 hours apart (cache TTLs are real)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _edit(path: Path, index: int) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + f"\n\n\ndef _bench_edit_{index}():\n    return {index}\n", encoding="utf-8")


class Explorer:
    """The no-memory arm: one fresh explorer per question, through the official SDK."""

    def __init__(self, setup: Setup, base_url: str, toolbox: Toolbox) -> None:
        self.setup = setup
        self.toolbox = toolbox
        self.reads: dict[str, str] = {}  # path -> the Read output of the current question
        if setup.protocol == "anthropic":
            self.anthropic: anthropic.AsyncAnthropic | None = anthropic.AsyncAnthropic(
                base_url=base_url, api_key="bench", max_retries=0
            )
            self.openai: openai.AsyncOpenAI | None = None
        else:
            self.anthropic = None
            self.openai = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="bench", max_retries=0)

    async def aclose(self) -> None:
        if self.anthropic is not None:
            await self.anthropic.close()
        if self.openai is not None:
            await self.openai.close()

    async def _read(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        outcome = await self.toolbox.run("Read", arguments)
        self.reads[str(arguments.get("file_path"))] = outcome.text
        return outcome.text, outcome.is_error

    async def ask(self, question: str) -> str:
        self.reads = {}
        if self.anthropic is not None:
            return await self._ask_anthropic(self.anthropic, question)
        assert self.openai is not None
        return await self._ask_openai(self.openai, question)

    async def _ask_anthropic(self, client: anthropic.AsyncAnthropic, question: str) -> str:
        system = [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": question_block(question)}]}
        ]
        for _ in range(MAX_EXPLORER_TURNS):
            response = await client.messages.create(
                model=self.setup.model,
                max_tokens=DEFAULT_MAX_ANSWER_TOKENS,
                system=system,  # type: ignore[arg-type]
                tools=list(TOOL_SCHEMAS),  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
            )
            calls = [b for b in response.content if b.type == "tool_use"]
            text = "".join(b.text for b in response.content if b.type == "text")
            if not calls:
                return text
            turn: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            turn += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.input)} for c in calls]
            messages.append({"role": "assistant", "content": turn})
            results: list[dict[str, Any]] = []
            for call in calls:
                output, is_error = await self._read(dict(call.input))
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": output}
                if is_error:
                    block["is_error"] = True
                results.append(block)
            messages.append({"role": "user", "content": results})
        return "(explorer ran out of turns)"

    async def _ask_openai(self, client: openai.AsyncOpenAI, question: str) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question_block(question)},
        ]
        tools = [tool_to_openai(t) for t in TOOL_SCHEMAS]
        for _ in range(MAX_EXPLORER_TURNS):
            response = await client.chat.completions.create(
                model=self.setup.model,
                max_tokens=DEFAULT_MAX_ANSWER_TOKENS,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
            )
            message = response.choices[0].message
            calls = [c for c in message.tool_calls or [] if getattr(c, "function", None) is not None]
            if not calls:
                return message.content or ""
            wire_calls: list[dict[str, Any]] = []
            for call in calls:
                arguments = json.loads(call.function.arguments or "{}")  # type: ignore[union-attr]
                wire_calls.append(
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.function.name, "arguments": json.dumps(arguments, sort_keys=True)},  # type: ignore[union-attr]
                    }
                )
            messages.append({"role": "assistant", "content": message.content or None, "tool_calls": wire_calls})
            for call, wire in zip(calls, wire_calls, strict=True):
                output, is_error = await self._read(json.loads(wire["function"]["arguments"]))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"ERROR: {output}" if is_error else output}
                )
        return "(explorer ran out of turns)"


def lm_read_outputs(records: Sequence[RecordedRequest]) -> dict[str, str]:
    """path -> the Read output Live Memory sent back to the model, over one question's requests."""
    calls: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for record in records:
        for message in record.body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_use" and block.get("name") == "Read":
                        calls[str(block.get("id"))] = str((block.get("input") or {}).get("file_path"))
                    elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                        outputs[calls[block["tool_use_id"]]] = str(block.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if function.get("name") == "Read":
                    calls[str(call.get("id"))] = str(json.loads(function.get("arguments") or "{}").get("file_path"))
            if message.get("role") == "tool" and message.get("tool_call_id") in calls:
                outputs[calls[message["tool_call_id"]]] = str(message.get("content"))
    return outputs


async def drive_session(
    server_url: str,
    mcp_url: str,
    repo: Path,
    steps: Sequence[Step],
    lm_fake: FakeLLM,
    base_fake: FakeLLM,
    setup: Setup,
    clock: VirtualClock,
    compactions: int,
) -> tuple[list[QuestionRecord], dict[str, Any]]:
    """Post each step's events, ask Live Memory, then the fresh explorer (serially)."""
    records: list[QuestionRecord] = []
    stats: dict[str, Any] = {}
    explorer = Explorer(setup, base_fake.base_url, Toolbox(repo))  # its SDK client lives on this event loop
    async with McpAsker(mcp_url) as asker, httpx2.AsyncClient(base_url=server_url, timeout=60) as http:
        for step in steps:
            clock.advance(QUESTION_GAP_S)
            record = QuestionRecord(step.index, step.session)
            events: list[dict[str, Any]] = []
            for action in step.actions:
                path = repo / action.path
                if action.kind == "edit":
                    _edit(path, step.index)
                    events.append({"path": action.path, "kind": "change"})
                else:
                    events.append({"path": action.path, "kind": "read", "content": path.read_text(encoding="utf-8")})
            if events:
                response = await http.post("/notify", json={"cwd": str(repo), "events": events})
                response.raise_for_status()
                record.notify_accepted = int(response.json()["accepted"])
                record.notify_ignored = int(response.json()["ignored"])
            first = len(lm_fake.requests)
            text, is_error = await asker.ask(step.question, str(repo))
            record.lm_range = (first, len(lm_fake.requests))
            record.lm_error = is_error
            if is_error:
                print(f"  question {step.index} failed: {text[:200]}", flush=True)
            response = await http.get("/stats", params={"cwd": str(repo)})
            stats = response.json()["workspace"]
            record.compaction = int(stats["compactions"]) > compactions
            compactions = int(stats["compactions"])
            record.fill = float(stats["fill"]["ratio"])
            first = len(base_fake.requests)
            await explorer.ask(step.question)
            record.base_range = (first, len(base_fake.requests))
            ours = lm_read_outputs(lm_fake.requests[record.lm_range[0] : record.lm_range[1]])
            for read_path, output in ours.items():
                if read_path in explorer.reads:
                    record.reads_compared += 1
                    record.reads_identical += int(explorer.reads[read_path] == output)
            records.append(record)
    await explorer.aclose()
    return records, stats


def run_setup(name: str) -> dict[str, Any]:
    """One setup end to end (both arms, all sessions); runs in a child process."""
    logging.basicConfig(level=logging.WARNING)  # before the app exists: the MCP SDK would configure INFO
    setup = next(s for s in SETUPS if s.name == name)
    pristine = django_repo()
    steps = build_script(pristine)
    symbols = {topic: symbols_of(pristine, TOPICS[topic].files) for topic in TOPICS}
    model = ScriptedModel(steps, symbols)
    clock = VirtualClock()
    started = time.perf_counter()
    records: list[QuestionRecord] = []
    compactions = 0
    with tempfile.TemporaryDirectory(prefix=f"lm-savings-{name}-") as tmp_name:
        tmp = Path(tmp_name)
        repo = tmp / "repo"
        shutil.copytree(pristine, repo, symlinks=True)
        fakes = dict(cache_rules=setup.rules, model=setup.model, cache_ttl_s=setup.cache_ttl_s, clock=clock)
        with FakeLLM(**fakes) as lm_fake, FakeLLM(**fakes) as base_fake:  # type: ignore[arg-type]
            lm_fake.responder = model
            base_fake.responder = model
            stats: dict[str, Any] = {}
            for session in range(SESSIONS):
                if session:
                    clock.advance(SESSION_GAP_S)
                settings = scripted_settings(lm_fake.base_url, tmp / "data", setup, BUDGET_TOKENS)
                chunk = steps[session * PER_SESSION : (session + 1) * PER_SESSION]
                with live_server(settings) as server:
                    session_records, stats = asyncio.run(
                        drive_session(
                            server.url,
                            server.mcp_url,
                            repo,
                            chunk,
                            lm_fake,
                            base_fake,
                            setup,
                            clock,
                            compactions,
                        )
                    )
                records += session_records
                compactions = int(stats.get("compactions", compactions))  # the counters persist across restarts
            lm_requests = list(lm_fake.requests)
            base_requests = list(base_fake.requests)
    lm, base = ArmTotals(setup.model), ArmTotals(setup.model)
    for record in records:
        lm.add_question(lm_requests[record.lm_range[0] : record.lm_range[1]])
        base.add_question(base_requests[record.base_range[0] : record.base_range[1]])
    lm_figures, base_figures = lm.figures(), base.figures()
    lm_figures.update(
        {
            "compactions": int(stats.get("compactions", 0)),
            "summaries_written": int(stats.get("summaries_written", 0)),
            "question_errors": sum(1 for r in records if r.lm_error),
            "notify_events_accepted": sum(r.notify_accepted for r in records),
            "notify_events_ignored": sum(r.notify_ignored for r in records),
            "server_reported_cost_usd": stats.get("cost_usd"),
            "server_estimated_tokens_saved": stats.get("estimated_tokens_saved"),
            "final_fill": stats.get("fill", {}).get("ratio"),
        }
    )
    lm_cumulative, base_cumulative = cumulative(lm.per_question), cumulative(base.per_question)
    even = break_even(lm_cumulative, base_cumulative)
    saved = base.cost - lm.cost
    identical = f"{sum(r.reads_identical for r in records)}/{sum(r.reads_compared for r in records)}"
    price = price_for(setup.model)
    return {
        "label": setup.label,
        "model": setup.model,
        "protocol": setup.protocol,
        "cache_rules": setup.rules,
        "cache_ttl_s": setup.cache_ttl_s,
        "prices_usd_per_mtok": (
            {
                "input": price.input,
                "output": price.output,
                "cache_write": price.cache_write,
                "cache_read": price.cache_read,
            }
            if price
            else None
        ),
        "live_memory": lm_figures,
        "baseline": base_figures,
        "comparison": {
            "baseline_minus_live_memory_usd": round(saved, 6),
            "baseline_minus_live_memory_share": round(saved / base.cost, 4) if base.cost else 0.0,
            "baseline_over_live_memory": round(base.cost / lm.cost, 2) if lm.cost else None,
            "break_even_after_question": even,
            "read_outputs_identical": identical,
            "unscripted_requests": model.unknown,
        },
        "series": {
            "question": [r.index + 1 for r in records],
            "session": [r.session + 1 for r in records],
            "live_memory_usd": [round(v, 6) for v in lm.per_question],
            "baseline_usd": [round(v, 6) for v in base.per_question],
            "live_memory_cumulative_usd": lm_cumulative,
            "baseline_cumulative_usd": base_cumulative,
            "compaction": [r.compaction for r in records],
            "fill": [round(r.fill, 4) for r in records],
            "live_memory_reads": lm.reads_per_question,
            "baseline_reads": base.reads_per_question,
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


# -- reporting -------------------------------------------------------------------------------------------
def _usd(value: float) -> str:
    return f"${value:.6f}" if abs(value) < 0.01 else f"${value:.4f}"


def print_setup(result: dict[str, Any]) -> None:
    lm, base, comparison = result["live_memory"], result["baseline"], result["comparison"]
    rows = [
        (
            "requests (of which summarizer)",
            f"{lm['requests']} ({lm['summarizer_requests']})",
            f"{base['requests']} (0)",
        ),
        ("Read tool calls", lm["read_calls"], base["read_calls"]),
        ("input (prompt) tokens", lm["prompt_tokens"], base["prompt_tokens"]),
        ("  uncached", lm["uncached_input_tokens"], base["uncached_input_tokens"]),
        ("  cache read", lm["cache_read_tokens"], base["cache_read_tokens"]),
        ("  cache write", lm["cache_write_tokens"], base["cache_write_tokens"]),
        ("cache-read share", f"{lm['cache_read_share']:.2%}", f"{base['cache_read_share']:.2%}"),
        ("output tokens", lm["output_tokens"], base["output_tokens"]),
        ("USD total", _usd(lm["cost_usd"]), _usd(base["cost_usd"])),
        ("USD per question", _usd(lm["cost_per_question_usd"]), _usd(base["cost_per_question_usd"])),
    ]
    print_table(
        ["metric", "Live Memory", "no memory"],
        rows,
        title=f"{result['label']} ({result['model']}, {result['cache_rules']} cache rules), {result['seconds']} s",
    )
    even = comparison["break_even_after_question"]
    difference = lm["cost_usd"] - base["cost_usd"]
    print(
        f"  Live Memory minus no memory: {'+' if difference >= 0 else '-'}{_usd(abs(difference))} "
        f"({difference / base['cost_usd']:+.1%} of the baseline); break-even: "
        + ("never" if even == "never" else f"after question {even}")
    )
    print(
        f"  Live Memory: {lm['compactions']} compactions, {lm['summaries_written']} summaries "
        f"({_usd(lm['summarizer_cost_usd'])}), {lm['notify_events_accepted']} events accepted / "
        f"{lm['notify_events_ignored']} ignored, server-reported cost {lm['server_reported_cost_usd']}, "
        f"identical Read outputs {comparison['read_outputs_identical']}"
    )
    if lm["question_errors"] or lm["errors"] or base["errors"] or comparison["unscripted_requests"]:
        print(
            f"  WARNING: {lm['question_errors']} failed questions, {lm['errors']}/{base['errors']} failed requests, "
            f"{comparison['unscripted_requests']} requests the script did not recognise"
        )
    if lm["compactions"] < 1:
        print("  WARNING: no compaction happened; lower BUDGET_TOKENS")


def main() -> dict[str, Any]:
    warn_if_busy()
    pristine = django_repo()
    steps = build_script(pristine)
    digest = hashlib.sha256(repr(steps).encode()).hexdigest()[:16]
    topic_bytes = {name: sum((pristine / f).stat().st_size for f in t.files) for name, t in TOPICS.items()}
    figures: dict[str, Any] = {
        "method": METHOD,
        "limits": list(LIMITS),
        "config": {
            "questions": QUESTIONS,
            "sessions": SESSIONS,
            "questions_per_session": PER_SESSION,
            "restarts": SESSIONS - 1,
            "max_context_tokens": BUDGET_TOKENS,
            "compaction_threshold": COMPACTION_THRESHOLD,
            "compaction_floor": COMPACTION_FLOOR,
            "repository": "django-5.1.4 sdist (bench/.cache)",
            "topics": len(TOPICS),
            "topics_asked": len({s.topic for s in steps}),
            "topic_files_bytes_median": sorted(topic_bytes.values())[len(topic_bytes) // 2],
            "tees": sum(1 for s in steps for a in s.actions if a.kind == "tee"),
            "edits": sum(1 for s in steps for a in s.actions if a.kind == "edit"),
            "question_gap_s": QUESTION_GAP_S,
            "session_gap_s": SESSION_GAP_S,
            "seed": SEED,
            "workload_digest": digest,
        },
        "setups": {},
    }
    print(f"running {len(SETUPS)} setups x 2 arms over {QUESTIONS} questions (in parallel) ...", flush=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(SETUPS), mp_context=context) as pool:
        futures = {s.name: pool.submit(run_setup, s.name) for s in SETUPS}
        for name, future in futures.items():
            figures["setups"][name] = future.result()
    for result in figures["setups"].values():
        print_setup(result)
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
