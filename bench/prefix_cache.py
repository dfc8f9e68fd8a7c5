"""Prefix-cache effectiveness of Live Memory's prompt layout over a scripted 200-question session.

Method
    The real server (in-process under uvicorn) answers 200 questions through one official MCP client
    session about a copy of the Django 5.1.4 sdist repository (built by `bench.tools_bench.django_repo`).
    The provider is `live_memory.testing.llm_server.FakeLLM`, run three times with its cache simulations:
    Anthropic rules (`claude-haiku-4-5`: 4096-token minimum, explicit breakpoints, 20-block lookback,
    5-minute TTL), DeepSeek rules (OpenAI protocol, 64-token units) and OpenAI rules (1024 minimum,
    128-token steps). The workload is deterministic (seeded) and identical in all three runs:
    - before a question, passive tees (`POST /notify` `read` events carrying the file's bytes) of 0-2
      files from a slowly drifting working set of Django files (2-12 KiB), with a burst of 12 tees every
      50 questions (an agent reading many files between two questions);
    - every 9th question an edit: a line is appended to a recently teed file on disk, then a `change`
      event is posted (every other time the agent also re-reads it, i.e. a tee of the new bytes);
    - the scripted model: every 5th question runs Grep then Read (150 lines) before answering, every
      5th+2 a Read; the rest answer from memory; answers are 1.1-1.7k characters naming file paths;
      summarizer calls (standalone, or folds that continue the conversation: `bench.common.summary_request`)
      answer with the ledger's changes, one new fact per line naming file paths, the ledger capped at ~6k
      characters (~1.5k tokens);
    - `max_context_tokens` = 100k so that compaction (0.85 -> 0.60) runs several times;
      `distill_min_interval_s` = 0 (a real session spreads 200 questions over hours, far beyond the
      60 s cooldown); the OS watcher is off so that no event timing can differ between runs.

Figures (per simulation), from the usage the fake reported for every recorded request
    - cache share = sum(cache reads) / sum(prompt tokens), over question requests, and over all requests
      including summarizer calls;
    - IDEAL share for the same request sequence: each request is credited with its longest common
      block prefix with the previous request of the same kind (question path / summarizer; a fold, with the
      question path's), in the fake's own blocks and token units (`live_memory.testing.prompt_blocks`,
      ceil(chars/4) per block), i.e.
      everything except what is new since the previous request. "ideal (any)" credits the longest prefix
      shared with any earlier request (an unbounded cache);
    - cost per question with `live_memory.providers.pricing` (Haiku 4.5: cache write 1.25x input, read
      0.1x; DeepSeek and OpenAI: no write premium), with and without the summarizer calls;
    - the NAIVE baseline: the Live Memory run's logical content replayed into naive request bodies sent to
      a fresh fake with the same rules: (a) the volatile block (ledger, held file contents, manifest) is
      re-rendered in place every question by the engine's own `ContextWindow.render_volatile()` (tees and
      edits mutate it; no frozen block, no deltas), and (b) front truncation instead of compaction: when
      the persistent prompt passes 0.85 x budget, the oldest items (whole exchanges and held file
      contents, first in first out) are dropped until it fits again. Everything else is copied from the
      Live Memory requests: tools, system prompt + directory tree, each request's current question turn
      (question, tool-loop turns, per-question hint), and the exchanges as Live Memory stores them
      (question, tool turns, answer). The naive bodies get Live Memory's breakpoint positions (Anthropic:
      stable system block, volatile block, last history block, last tail block before the hint). On the
      OpenAI protocol the naive body sends the stable and the volatile text as two system messages, so an
      in-place change does not also invalidate the directory tree (a conservative, baseline-friendly
      choice; Live Memory itself joins them into one system message);
    - a breakdown of where the uncached tokens come from, and a per-question series for charts.

Limits
    The fake counts ceil(chars/4) tokens per block and matches whole blocks, so a change anywhere inside
    a block misses the whole block (real OpenAI/DeepSeek match at token granularity, which would favour
    the naive layout a little). For the same reason, on the OpenAI protocol (where Live Memory's adapter
    joins the stable prefix and the frozen block into one system message) a compaction's re-freeze also
    misses the directory tree in the fake, which a token-granular cache would still match: the "after a
    re-freeze" misses of the DeepSeek/OpenAI simulations are somewhat pessimistic. Time is compressed:
    200 questions run in about a minute, so the 5-minute TTL never expires (idle gaps and keep-warm are
    not modelled). DeepSeek is simulated as plain prefix matching, not its newer "cache prefix unit"
    persistence. The three simulations run in parallel child processes; each hosts its own server, fake
    and client, which affects nothing measured here (tokens, not time).

Run: `python -m bench.prefix_cache`. Writes bench/results/prefix_cache.json.
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
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import httpx2

from bench.common import (
    McpAsker,
    content_text,
    print_table,
    save_results,
    scripted_ledger,
    scripted_settings,
    summary_request,
    system_text,
    warn_if_busy,
)
from bench.tools_bench import django_repo
from live_memory.constants import COMPACTION_THRESHOLD
from live_memory.core.prompts import (
    HINT_HEADING,
    LEDGER_HEADING,
    QUESTION_HEADING,
    SYSTEM_PROMPT,
    question_block,
)
from live_memory.core.records import Usage
from live_memory.memory.context_window import ContextWindow
from live_memory.providers.pricing import cost_usd, price_for
from live_memory.providers.profiles import EXPLICIT_CACHE
from live_memory.testing.live_server import live_server
from live_memory.testing.llm_server import CacheRules, FakeLLM, RecordedRequest, Reply
from live_memory.testing.prompt_blocks import Prompt, anthropic_prompt, openai_prompt

SEED = 20_241_130
QUESTIONS = 200
BUDGET_TOKENS = 100_000
WORKING_SET = 40
READ_LINES = 150
ANSWER_CHARS = (1100, 1700)
BURST_EVERY, BURST_AT, BURST_TEES = 50, 25, 12
EDIT_EVERY, EDIT_AT = 9, 4
LOOKBACK_BLOCKS = EXPLICIT_CACHE.lookback_blocks
GOAL_SHARE = 0.90
GOAL_GAP_POINTS = 3.0
MIN_COMPACTIONS = 3
QUESTION_MARK = SYSTEM_PROMPT[:60]
NAME = "prefix_cache"


@dataclass(frozen=True)
class Simulation:
    name: str
    protocol: Literal["anthropic", "openai"]
    rules: CacheRules
    provider: str
    model: str


SIMULATIONS = (
    Simulation("anthropic", "anthropic", "anthropic", "anthropic", "claude-haiku-4-5"),
    Simulation("deepseek", "openai", "deepseek", "deepseek", "deepseek-flash"),
    Simulation("openai", "openai", "openai", "openai", "gpt-5-mini"),
)


# -- the scripted session ------------------------------------------------------------------------------
ToolStep = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Step:
    index: int
    question: str
    plan: tuple[ToolStep, ...]  # tool calls the model makes, in order, before it answers
    edits: tuple[str, ...]  # files modified on disk (+ a change event) before the question
    tees: tuple[str, ...]  # files teed (read event with content) before the question, after the edits
    working: tuple[str, ...]  # the files the answer talks about


GREPS: tuple[tuple[str, str], ...] = (
    ("def get_queryset", "django/contrib"),
    (r"class \w+Field\(", "django/db/models"),
    ("import warnings", "django/core"),
    (r"def __init__\(self", "django/forms"),
    ("raise ImproperlyConfigured", "django/conf"),
    (r"@cached_property", "django/utils"),
    (r"def as_sql\(", "django/db/models/sql"),
    ("class Meta:", "django/contrib/auth"),
)
QUESTION_TEMPLATES: tuple[str, ...] = (
    "Where is {stem} implemented in {parent}, and what calls it?",
    "What does {path} export, and which modules import it?",
    "How does {parent} handle errors raised from {stem}?",
    "Which settings affect the behaviour of {path}?",
    "Summarise the public API of {stem} and where it is tested.",
    "What changed recently around {path}, and why?",
    "Which classes in {parent} subclass something defined in {stem}?",
    "How is {stem} wired into request handling, step by step?",
    "Is there caching in {path}; what invalidates it?",
    "What are the invariants {stem} relies on?",
)
ANSWER_SENTENCES: tuple[str, ...] = (
    "{a} defines the {sa} helpers; they are consumed by {b} through a module-level import.",
    "The entry point is {sa}.{word}() in {a}, which delegates to {b} for the {word2} step.",
    "{b} keeps a per-instance cache of {word} results that {c} invalidates on save.",
    "Configuration flows from django/conf/__init__.py into {a}; {c} reads the same setting lazily.",
    "Errors surface as ImproperlyConfigured from {b}; {a} wraps them with the offending {word2} name.",
    "Tests for this live next to {c}; the {word} path is covered by the {sa} suite.",
    "{a} and {b} share the {word2} protocol; {c} is the only place that extends it.",
)
WORDS = ("resolve", "compile", "validate", "prepare", "render", "connect", "clean", "deconstruct", "bind")


def candidate_files(repo: Path) -> list[str]:
    """Django package files of 2-12 KiB, sorted: the pool tees, reads and edits draw from."""
    out = []
    for path in sorted((repo / "django").rglob("*.py")):
        rel = path.relative_to(repo).as_posix()
        if "/locale/" in rel or "/migrations/" in rel:
            continue
        if 2048 <= path.stat().st_size <= 12 * 1024:
            out.append(rel)
    return out


def build_script(candidates: Sequence[str], questions: int = QUESTIONS) -> list[Step]:
    rng = random.Random(SEED)
    steps: list[Step] = []
    recent_tees: list[str] = []
    for i in range(questions):
        start = (i * 4 // 10) % (len(candidates) - WORKING_SET)
        working = tuple(candidates[start : start + WORKING_SET])
        edits: list[str] = []
        tees: list[str] = []
        if i >= 1:  # events only reach a loaded workspace (after the first question)
            if i % EDIT_EVERY == EDIT_AT and recent_tees:
                edited = rng.choice(recent_tees[-10:])
                edits.append(edited)
                if (i // EDIT_EVERY) % 2 == 0:
                    tees.append(edited)  # the agent re-reads what it just edited
            if i % BURST_EVERY == BURST_AT:
                count = BURST_TEES
            elif i % 3 == 1:
                count = 1
            elif i % 7 == 3:
                count = 2
            else:
                count = 0
            tees += [p for p in rng.sample(working, count) if p not in tees]
            recent_tees += tees
        plan: tuple[ToolStep, ...] = ()
        target = rng.choice(working)
        if i % 5 == 0:
            pattern, where = GREPS[(i // 5) % len(GREPS)]
            grep = {"pattern": pattern, "path": where, "output_mode": "files_with_matches", "head_limit": 20}
            plan = (("Grep", grep), ("Read", {"file_path": target, "limit": READ_LINES}))
        elif i % 5 == 2:
            plan = (("Read", {"file_path": target, "limit": READ_LINES}),)
        subject = rng.choice(working)
        template = QUESTION_TEMPLATES[rng.randrange(len(QUESTION_TEMPLATES))]
        text = template.format(
            path=subject, stem=Path(subject).stem, parent=str(Path(subject).parent).replace("\\", "/")
        )
        steps.append(Step(i, f"Q{i}: {text}", plan, tuple(edits), tuple(tees), working))
    return steps


def answer_text(step: Step) -> str:
    """A deterministic answer of a few hundred tokens naming workspace files."""
    rng = random.Random(SEED * 7 + step.index)
    target = rng.randint(*ANSWER_CHARS)
    lines = [f"Short answer for Q{step.index}: see {step.working[0]} and {step.working[1]}."]
    size = len(lines[0])
    while size < target:
        a, b, c = rng.sample(step.working, 3)
        sentence = rng.choice(ANSWER_SENTENCES).format(
            a=a, b=b, c=c, sa=Path(a).stem, word=rng.choice(WORDS), word2=rng.choice(WORDS)
        )
        lines.append(f"- {sentence}")
        size += len(sentence) + 3
    return "\n".join(lines)


# -- request anatomy (both protocols) ------------------------------------------------------------------
def is_summary(body: dict[str, Any]) -> bool:
    return summary_request(body) is not None


def is_question(body: dict[str, Any]) -> bool:
    return system_text(body).startswith(QUESTION_MARK) and not is_summary(body)


def question_index(messages: Sequence[dict[str, Any]]) -> int | None:
    """Index of the current question's turn: the last user message that opens with the question heading
    (what follows it is this question's tool loop; the per-question hint rides on the last message)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and content_text(message.get("content")).startswith(QUESTION_HEADING):
            return index
    return None


def hint_is_last_block(body: dict[str, Any], protocol: str) -> bool:
    """Whether the request's last block is the hint alone (else it shares a block with the question)."""
    messages = body.get("messages") or []
    if not messages:
        return False
    content = messages[-1].get("content")
    if protocol == "anthropic":
        last = content[-1] if isinstance(content, list) and content else {}
        return isinstance(last, dict) and str(last.get("text", "")).startswith(HINT_HEADING)
    return messages[-1].get("role") == "user" and str(content or "").startswith(HINT_HEADING)


def without_hint(messages: Sequence[dict[str, Any]], protocol: str) -> list[dict[str, Any]]:
    """The question's turns as the product stores them: the hint removed, cache_control stripped."""
    out = [_strip_cache(m) for m in messages]
    if not out:
        return out
    last = out[-1]
    content = last.get("content")
    if protocol == "anthropic" and isinstance(content, list):
        kept = [b for b in content if not str(b.get("text", "")).startswith(HINT_HEADING)]
        out[-1] = {**last, "content": kept}
        if not kept:
            out.pop()
    elif isinstance(content, str) and last.get("role") == "user":
        if content.startswith(HINT_HEADING):
            out.pop()
        else:
            out[-1] = {**last, "content": content.split("\n\n" + HINT_HEADING, 1)[0]}
    return out


def system_region(body: dict[str, Any]) -> tuple[str, ...]:
    """The system text(s): what a re-freeze (Live Memory) or an in-place mutation (naive) changes."""
    if isinstance(body.get("system"), list):
        return tuple(str(b.get("text", "")) for b in body["system"])
    return tuple(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")


def parse_prompt(body: dict[str, Any], protocol: str) -> Prompt:
    return anthropic_prompt(body)[0] if protocol == "anthropic" else openai_prompt(body)


def question_block_index(body: dict[str, Any], protocol: str) -> int:
    """The fake's block index where the current question's turn starts (0 when there is none)."""
    messages = body.get("messages") or []
    at = question_index(messages)
    if at is None:
        return 0
    tools = len(body.get("tools") or [])
    if protocol == "anthropic":

        def count(message: dict[str, Any]) -> int:
            content = message.get("content")
            return len(content) if isinstance(content, list) else 1

        return tools + len(body.get("system") or []) + sum(count(m) for m in messages[:at])
    return tools + at


# -- running one simulation ----------------------------------------------------------------------------
@dataclass
class QuestionRecord:
    index: int
    first_request: int
    end_request: int
    compaction: bool
    fill: float
    error: bool
    tees: list[tuple[str, str, str]] = field(default_factory=list)  # (path, content, sha256) as posted
    edits: list[str] = field(default_factory=list)
    reads: list[tuple[str, str, int]] = field(default_factory=list)  # (path, sha256, size) read by the tools


@dataclass
class SessionRun:
    simulation: Simulation
    requests: list[RecordedRequest]
    records: list[QuestionRecord]
    answers: dict[int, str]
    final_stats: dict[str, Any]
    notify_ignored: int
    seconds: float


class ScriptedModel:
    """The fake provider's responder: follows each step's tool plan, then answers; summarizes ledgers."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = steps
        self.answers: dict[int, str] = {}

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body
        if is_summary(body):
            return Reply.text(scripted_ledger(summary_request(body) or ""))
        messages = body.get("messages") or []
        at = question_index(messages)
        text = content_text(messages[at].get("content")) if at is not None else ""
        found = re.search(r"^Q(\d+): ", text.split("\n", 1)[-1])
        if at is None or found is None:
            return Reply.text("(no question found)")
        step = self.steps[int(found.group(1))]
        done = sum(1 for m in messages[at + 1 :] if m.get("role") == "assistant")
        if done < len(step.plan):
            name, arguments = step.plan[done]
            return Reply.tool_call(name, arguments)
        text = answer_text(step)
        self.answers[step.index] = text
        return Reply.text(text)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def drive(
    server_url: str, mcp_url: str, repo: Path, steps: Sequence[Step], fake: FakeLLM
) -> tuple[list[QuestionRecord], dict[str, Any], int]:
    """Post each step's events, ask its question, and record what happened (serially)."""
    records: list[QuestionRecord] = []
    ignored = 0
    compactions = 0
    stats: dict[str, Any] = {}
    async with McpAsker(mcp_url) as asker, httpx2.AsyncClient(base_url=server_url, timeout=60) as http:
        for step in steps:
            record = QuestionRecord(step.index, 0, 0, False, 0.0, False)
            events: list[dict[str, Any]] = []
            for rel in step.edits:
                path = repo / rel
                path.write_bytes(path.read_bytes() + f"# live-memory bench edit {step.index}\n".encode())
                events.append({"path": rel, "kind": "change"})
                record.edits.append(rel)
            for rel in step.tees:
                data = (repo / rel).read_bytes()
                events.append({"path": rel, "kind": "read", "content": data.decode()})
                record.tees.append((rel, data.decode(), _sha(data)))
            if events:
                response = await http.post("/notify", json={"cwd": str(repo), "events": events})
                response.raise_for_status()
                ignored += int(response.json()["ignored"])
            record.first_request = len(fake.requests)
            text, is_error = await asker.ask(step.question, str(repo))
            record.end_request = len(fake.requests)
            record.error = is_error
            for name, arguments in step.plan:
                if name == "Read":
                    data = (repo / arguments["file_path"]).read_bytes()
                    record.reads.append((arguments["file_path"], _sha(data), len(data)))
            response = await http.get("/stats", params={"cwd": str(repo)})
            stats = response.json()["workspace"]
            record.compaction = stats["compactions"] > compactions
            compactions = stats["compactions"]
            record.fill = float(stats["fill"]["ratio"])
            records.append(record)
            if is_error:
                print(f"  question {step.index} failed: {text[:200]}", flush=True)
    return records, stats, ignored


def run_live_memory(simulation: Simulation, steps: Sequence[Step], pristine: Path, tmp: Path) -> SessionRun:
    repo = tmp / f"repo-{simulation.name}"
    shutil.copytree(pristine, repo, symlinks=True)
    model = ScriptedModel(steps)
    started = time.perf_counter()
    with FakeLLM(cache_rules=simulation.rules, model=simulation.model) as fake:
        fake.responder = model
        settings = scripted_settings(fake.base_url, tmp / f"data-{simulation.name}", simulation, BUDGET_TOKENS)
        with live_server(settings) as server:
            records, stats, ignored = asyncio.run(drive(server.url, server.mcp_url, repo, steps, fake))
        requests = list(fake.requests)
    shutil.rmtree(repo, ignore_errors=True)
    return SessionRun(simulation, requests, records, dict(model.answers), stats, ignored, time.perf_counter() - started)


# -- the naive baseline --------------------------------------------------------------------------------
_EPHEMERAL = {"type": "ephemeral"}


def _strip_cache(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        content = [{k: v for k, v in b.items() if k != "cache_control"} for b in content]
    return {**message, "content": content}


def _mark_last(messages: list[dict[str, Any]]) -> None:
    if messages and isinstance(messages[-1].get("content"), list) and messages[-1]["content"]:
        blocks = list(messages[-1]["content"])
        blocks[-1] = {**blocks[-1], "cache_control": _EPHEMERAL}
        messages[-1] = {**messages[-1], "content": blocks}


@dataclass
class NaiveState:
    """The naive window: the engine's ContextWindow used only as state + renderer (never frozen)."""

    window: ContextWindow
    exchanges: list[tuple[int, list[dict[str, Any]]]] = field(default_factory=list)  # (entered, wire turns)
    entered: dict[str, int] = field(default_factory=dict)  # held file -> when its content entered
    clock: int = 0

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def size(self, stable: str) -> int:
        def tokens(text: str) -> int:
            return -(-len(text) // 4)

        volatile = self.window.render_volatile()
        turns = sum(tokens(json.dumps(m["content"])) for _, exchange in self.exchanges for m in exchange)
        return tokens(stable) + tokens(volatile) + turns

    def truncate(self, stable: str, limit: int) -> int:
        """Front truncation: drop the oldest exchange or held file content until the prompt fits."""
        dropped = 0
        while self.size(stable) > limit:
            held = [(t, p) for p, t in self.entered.items() if self.window.files[p].content is not None]
            oldest_file = min(held) if held else None
            oldest_pair = self.exchanges[0][0] if self.exchanges else None
            if oldest_file is None and oldest_pair is None:
                break
            if oldest_pair is not None and (oldest_file is None or oldest_pair < oldest_file[0]):
                self.exchanges.pop(0)
            else:
                assert oldest_file is not None
                path = oldest_file[1]
                self.window.files[path] = replace(self.window.files[path], content=None)
                del self.entered[path]
            dropped += 1
        return dropped


def naive_body(
    protocol: str,
    lm_body: dict[str, Any],
    stable: str,
    volatile: str,
    exchanges: Sequence[tuple[int, list[dict[str, Any]]]],
) -> dict[str, Any]:
    """The naive request: the same tools and question tail as Live Memory sent, the naive system and history."""
    messages = lm_body["messages"]
    at = question_index(messages)
    assert at is not None
    body: dict[str, Any] = {"model": lm_body["model"], "max_tokens": lm_body["max_tokens"], "tools": lm_body["tools"]}
    history = [m for _, exchange in exchanges for m in exchange]
    if protocol == "anthropic":
        history = list(history)
        _mark_last(history)  # bp3
        tail = [_strip_cache(m) for m in messages[at:]]
        last = list(tail[-1]["content"])
        hinted = len(last) > 1 and str(last[-1].get("text", "")).startswith(HINT_HEADING)
        mark = len(last) - 2 if hinted else len(last) - 1
        last[mark] = {**last[mark], "cache_control": _EPHEMERAL}  # bp4, before the hint like Live Memory's
        tail[-1] = {**tail[-1], "content": last}
        body["system"] = [
            {"type": "text", "text": stable, "cache_control": _EPHEMERAL},
            {"type": "text", "text": volatile, "cache_control": _EPHEMERAL},
        ]
        body["messages"] = [*history, *tail]
        return body
    chat: list[dict[str, Any]] = [{"role": "system", "content": stable}, {"role": "system", "content": volatile}]
    body["messages"] = [*chat, *history, *messages[at:]]
    return body


def stable_of(body: dict[str, Any]) -> str:
    """System prompt + directory tree, as Live Memory sent it (bp1)."""
    text = system_text(body)
    return text.split("\n\n" + LEDGER_HEADING, 1)[0]


def run_naive(run: SessionRun) -> tuple[list[RecordedRequest], list[tuple[int, int]], dict[str, int]]:
    """Replay the run's logical content as naive bodies against a fresh fake; returns the recorded
    requests, each question's request range, and truncation counts."""
    simulation = run.simulation
    state = NaiveState(ContextWindow(budget_tokens=BUDGET_TOKENS))
    limit = int(COMPACTION_THRESHOLD * BUDGET_TOKENS)
    ranges: list[tuple[int, int]] = []
    truncations = {"questions_with_truncation": 0, "items_dropped": 0}
    path = "/v1/messages" if simulation.protocol == "anthropic" else "/v1/chat/completions"
    with (
        FakeLLM(cache_rules=simulation.rules, model=simulation.model) as fake,
        httpx2.Client(base_url=fake.base_url, timeout=60) as http,
    ):
        fake.responder = lambda request: Reply.text("naive replay")
        for record in run.records:
            window = state.window
            for rel in record.edits:
                window.invalidate(rel)
                state.entered.pop(rel, None)
            for rel, content, sha in record.tees:
                if window.observe(rel, content, sha):
                    state.entered[rel] = state.tick()
            bodies = [r.body for r in run.requests[record.first_request : record.end_request] if is_question(r.body)]
            if not bodies:
                ranges.append((len(fake.requests), len(fake.requests)))
                continue
            stable = stable_of(bodies[0])
            dropped = state.truncate(stable, limit)
            if dropped:
                truncations["questions_with_truncation"] += 1
                truncations["items_dropped"] += dropped
            volatile = window.render_volatile()  # rendered once per question, in place
            first = len(fake.requests)
            for lm_body in bodies:
                body = naive_body(simulation.protocol, lm_body, stable, volatile, state.exchanges)
                http.post(path, json=body).raise_for_status()
            ranges.append((first, len(fake.requests)))
            for rel, sha, size in record.reads:
                window.record_read(rel, sha, size)
            # The exchange as Live Memory stores it: the question and its tool turns (from the last request,
            # hint removed), then the final answer.
            last = bodies[-1]["messages"]
            turns = without_hint(last[question_index(last) or 0 :], simulation.protocol)
            assert content_text(turns[0]["content"]).startswith(question_block(f"Q{record.index}:")), turns[0]
            answer = run.answers.get(record.index, "(no answer)")
            if simulation.protocol == "anthropic":
                turns.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
            else:
                turns.append({"role": "assistant", "content": answer})
            state.exchanges.append((state.tick(), turns))
        requests = list(fake.requests)
    return requests, ranges, truncations


# -- analysis ------------------------------------------------------------------------------------------
@dataclass
class RequestFacts:
    kind: Literal["question", "summary", "other"]
    question: int
    iteration: int
    total: int
    read: int
    write: int
    output: int
    ideal: int
    ideal_any: int
    question_start: int  # tokens before the current question's turn
    hint_start: int  # tokens before the hint block (the total when the hint shares the question's block)
    system_changed: bool
    blocks_added: int  # history blocks added since the previous question's first request


def _usage_numbers(usage: dict[str, Any] | None) -> tuple[int, int, int]:
    if not usage:
        return 0, 0, 0
    read = int(
        usage.get("cache_read_input_tokens")
        or usage.get("prompt_cache_hit_tokens")
        or (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        or 0
    )
    write = int(usage.get("cache_creation_input_tokens") or 0)
    output = int(usage.get("output_tokens") or usage.get("completion_tokens") or 0)
    return read, write, output


def request_facts(
    requests: Sequence[RecordedRequest], ranges: Sequence[tuple[int, int]], protocol: str, model: str
) -> list[RequestFacts]:
    question_of: dict[int, int] = {}
    for index, (first, end) in enumerate(ranges):
        for position in range(first, end):
            question_of[position] = index
    facts: list[RequestFacts] = []
    previous: dict[str, list[str]] = {}
    seen_keys: set[bytes] = set()
    last_system: tuple[str, ...] | None = None
    last_prefix_blocks: int | None = None
    iteration: dict[int, int] = {}
    for position, request in enumerate(requests):
        body = request.body
        kind: Literal["question", "summary", "other"] = (
            "question" if is_question(body) else "summary" if is_summary(body) else "other"
        )
        prompt = parse_prompt(body, protocol)
        identities = [b.identity for b in prompt.blocks]
        cumulative = prompt.cumulative()
        # A fold continues the question path's conversation: what it can share is the last question's prefix.
        fold = kind == "summary" and system_text(body).startswith(QUESTION_MARK)
        earlier = previous.get("question" if fold else kind, [])
        common = 0
        for a, b in zip(identities, earlier, strict=False):
            if a != b:
                break
            common += 1
        ideal = cumulative[common - 1] if common else 0
        keys = prompt.keys(model)
        any_match = next((i for i in range(len(keys) - 1, -1, -1) if keys[i] in seen_keys), -1)
        ideal_any = cumulative[any_match] if any_match >= 0 else 0
        seen_keys.update(keys)
        if not fold:
            previous[kind] = identities
        read, write, output = _usage_numbers(request.usage)
        question = question_of.get(position, -1)
        start_block = question_block_index(body, protocol) if kind == "question" else 0
        question_start = cumulative[start_block - 1] if start_block else 0
        hint_start = cumulative[-2] if kind == "question" and hint_is_last_block(body, protocol) else cumulative[-1]
        changed = False
        step = blocks_added = 0
        if kind == "question":
            region = system_region(body)
            changed = last_system is not None and region != last_system
            last_system = region
            step = iteration.get(question, 0)
            iteration[question] = step + 1
            if step == 0:
                blocks_added = start_block - (last_prefix_blocks or start_block)
                last_prefix_blocks = start_block
        facts.append(
            RequestFacts(
                kind=kind,
                question=question,
                iteration=step,
                total=request.prompt_tokens,
                read=read,
                write=write,
                output=output,
                ideal=ideal,
                ideal_any=ideal_any,
                question_start=question_start,
                hint_start=hint_start,
                system_changed=changed,
                blocks_added=blocks_added,
            )
        )
    return facts


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def _cost(model: str, facts: Sequence[RequestFacts]) -> float:
    return sum(cost_usd(model, Usage(f.total - f.read - f.write, f.output, f.read, f.write)) for f in facts)


def summarize(facts: Sequence[RequestFacts], model: str, questions: int) -> dict[str, Any]:
    asked = [f for f in facts if f.kind == "question"]
    summaries = [f for f in facts if f.kind == "summary"]
    total_q = sum(f.total for f in asked)
    total_all = total_q + sum(f.total for f in summaries)
    price = price_for(model)
    uncached_cost = sum(cost_usd(model, Usage(f.total, f.output, 0, 0)) for f in [*asked, *summaries])
    # Where the uncached question tokens are (prompt positions not served from cache).
    cold = asked[0].total - asked[0].read if asked else 0
    refreeze = [f for f in asked[1:] if f.system_changed]
    steady = [f for f in asked[1:] if not f.system_changed]

    def uncached_split(group: Sequence[RequestFacts]) -> dict[str, int]:
        prefix = question = loop = hint = 0
        for f in group:
            prefix += max(f.question_start - f.read, 0)
            turn = max(f.hint_start - max(f.read, f.question_start), 0)
            if f.iteration == 0:
                question += turn
            else:
                loop += turn
            hint += f.total - max(f.read, f.hint_start)
        return {
            "history_and_system": prefix,
            "question_first_request": question,
            "question_and_tool_turns_later_requests": loop,
            "hint": hint,
        }

    shortfall_first = sum(max(f.ideal - f.read, 0) for f in steady if f.iteration == 0)
    shortfall_loop = sum(max(f.ideal - f.read, 0) for f in steady if f.iteration > 0)
    lookback = [f for f in steady if f.iteration == 0 and f.blocks_added >= LOOKBACK_BLOCKS]
    return {
        "questions": questions,
        "question_requests": len(asked),
        "tool_loop_requests": sum(1 for f in asked if f.iteration > 0),
        "summarizer_requests": len(summaries),
        "prompt_tokens_questions": total_q,
        "prompt_tokens_all": total_all,
        "cache_read_share_questions": _share(sum(f.read for f in asked), total_q),
        "cache_read_share_all": _share(sum(f.read for f in [*asked, *summaries]), total_all),
        "ideal_share_questions": _share(sum(f.ideal for f in asked), total_q),
        "ideal_share_all": _share(sum(f.ideal for f in [*asked, *summaries]), total_all),
        "ideal_any_share_questions": _share(sum(f.ideal_any for f in asked), total_q),
        "cache_write_tokens": sum(f.write for f in [*asked, *summaries]),
        "cache_write_tokens_tool_loop": sum(f.write for f in asked if f.iteration > 0),
        "cost_per_question_usd": round(_cost(model, [*asked, *summaries]) / questions, 6),
        "cost_per_question_questions_only_usd": round(_cost(model, asked) / questions, 6),
        "cost_per_question_if_uncached_usd": round(uncached_cost / questions, 6),
        "cost_of_cache_writes_usd": round(
            sum(f.write for f in facts) * (price.cache_write if price else 0.0) / 1_000_000, 6
        ),
        "uncached": {
            "cold_first_request": cold,
            "after_refreeze_requests": len(refreeze),
            "after_refreeze_tokens": sum(f.total - f.read for f in refreeze),
            "steady": uncached_split(steady),
        },
        "shortfall_vs_ideal": {
            "first_request_of_question": shortfall_first,
            "tool_loop_requests": shortfall_loop,
            "after_refreeze": sum(max(f.ideal - f.read, 0) for f in refreeze),
            "lookback_gap_requests": len(lookback),
            "lookback_gap_tokens": sum(max(f.ideal - f.read, 0) for f in lookback),
            "max_history_blocks_added_between_questions": max((f.blocks_added for f in steady), default=0),
        },
    }


def series(
    records: Sequence[QuestionRecord], lm: Sequence[RequestFacts], naive: Sequence[RequestFacts]
) -> list[dict[str, Any]]:
    def share(facts: Sequence[RequestFacts], question: int) -> tuple[float, int]:
        own = [f for f in facts if f.kind == "question" and f.question == question]
        total = sum(f.total for f in own)
        return _share(sum(f.read for f in own), total), total

    out = []
    for record in records:
        lm_share, lm_total = share(lm, record.index)
        naive_share, _ = share(naive, record.index)
        out.append(
            {
                "question": record.index,
                "cache_read_share": lm_share,
                "fill": record.fill,
                "compaction": record.compaction,
                "prompt_tokens": lm_total,
                "naive_cache_read_share": naive_share,
            }
        )
    return out


# -- reporting -----------------------------------------------------------------------------------------
def explain(lm: dict[str, Any], *, goal_applies: bool, breakpoints: bool) -> list[str]:
    """Plain-language lines: the goal verdict and where the uncached tokens went."""
    lines = []
    share, ideal = lm["cache_read_share_questions"], lm["ideal_share_questions"]
    gap = (ideal - share) * 100
    total = lm["prompt_tokens_questions"]
    if goal_applies:
        verdict = "MET" if share >= GOAL_SHARE and gap <= GOAL_GAP_POINTS else "MISSED"
        lines.append(
            f"goal (>= {GOAL_SHARE:.0%} from cache, within {GOAL_GAP_POINTS:.0f} points of ideal): {verdict} — "
            f"{share:.2%} from cache ({(share - GOAL_SHARE) * 100:+.2f} points vs {GOAL_SHARE:.0%}), "
            f"{gap:.2f} points below ideal {ideal:.2%}"
        )
    unc = lm["uncached"]
    steady = unc["steady"]
    short = lm["shortfall_vs_ideal"]
    missed = total - round(share * total)

    def pct(tokens: int) -> str:
        return f"{tokens:,} tok = {tokens / total:.2%} of question prompt tokens"

    lines.append(f"uncached question tokens: {pct(missed)}; of which")
    lines.append(f"  cold first request               {pct(unc['cold_first_request'])}")
    lines.append(
        f"  {unc['after_refreeze_requests']} requests after a re-freeze   {pct(unc['after_refreeze_tokens'])} "
        "(compaction rewrites the frozen block and history)"
    )
    lines.append(f"  new history (exchanges, deltas)  {pct(steady['history_and_system'])}")
    lines.append(f"  the question (first requests)    {pct(steady['question_first_request'])}")
    lines.append(f"  tool-loop turns (later requests) {pct(steady['question_and_tool_turns_later_requests'])}")
    lines.append(f"  per-question hint (never cached) {pct(steady['hint'])}")
    lines.append(
        f"shortfall vs ideal: first requests {short['first_request_of_question']:,} tok, tool-loop requests "
        f"{short['tool_loop_requests']:,} tok, after re-freeze {short['after_refreeze']:,} tok"
    )
    if breakpoints:
        lines.append(
            f"  {short['lookback_gap_requests']} questions had >= {LOOKBACK_BLOCKS} history blocks appended since "
            f"the previous question's bp3 (beyond the 20-block lookback): {short['lookback_gap_tokens']:,} tok short; "
            f"largest gap {short['max_history_blocks_added_between_questions']} blocks"
        )
    if lm["cache_write_tokens"]:
        lines.append(
            f"cache writes: {lm['cache_write_tokens']:,} tok (${lm['cost_of_cache_writes_usd']:.4f}); "
            f"{lm['cache_write_tokens_tool_loop']:,} tok written by tool-loop requests (bp4 on the latest tool turn)"
        )
    return lines


def simulate(name: str, questions: int) -> dict[str, Any]:
    """One simulation end to end (Live Memory run, naive replay, analysis); runs in a child process."""
    logging.basicConfig(level=logging.WARNING)  # before the app exists: the MCP SDK would configure INFO
    simulation = next(s for s in SIMULATIONS if s.name == name)
    pristine = django_repo()
    steps = build_script(candidate_files(pristine), questions)
    print(f"running {simulation.name} ({simulation.model}, {simulation.rules} cache rules) ...", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"lm-prefix-bench-{name}-") as tmp_name:
        run = run_live_memory(simulation, steps, pristine, Path(tmp_name))
    ranges = [(r.first_request, r.end_request) for r in run.records]
    lm_facts = request_facts(run.requests, ranges, simulation.protocol, simulation.model)
    naive_requests, naive_ranges, truncations = run_naive(run)
    naive_facts = request_facts(naive_requests, naive_ranges, simulation.protocol, simulation.model)
    lm = summarize(lm_facts, simulation.model, questions)
    lm["compactions"] = int(run.final_stats.get("compactions", 0))
    lm["summaries_written"] = int(run.final_stats.get("summaries_written", 0))
    lm["errors"] = sum(1 for r in run.records if r.error)
    lm["plan_mismatches"] = sum(
        1
        for r in run.records
        if sum(1 for q in run.requests[r.first_request : r.end_request] if is_question(q.body))
        != 1 + len(steps[r.index].plan)
    )
    lm["notify_events_ignored"] = run.notify_ignored
    lm["final_fill"] = run.final_stats.get("fill", {}).get("ratio")
    lm["seconds"] = round(run.seconds, 1)
    naive = summarize(naive_facts, simulation.model, questions)
    naive.update(truncations)
    cost_ratio = naive["cost_per_question_usd"] / lm["cost_per_question_usd"] if lm["cost_per_question_usd"] else 0
    return {
        "model": simulation.model,
        "cache_rules": simulation.rules,
        "live_memory": lm,
        "naive": naive,
        "ratios": {
            "cost_naive_over_live_memory": round(cost_ratio, 2),
            "share_points_over_naive": round(
                (lm["cache_read_share_questions"] - naive["cache_read_share_questions"]) * 100, 2
            ),
        },
        "analysis": explain(
            lm, goal_applies=simulation.name == "anthropic", breakpoints=simulation.protocol == "anthropic"
        ),
        "series": series(run.records, lm_facts, naive_facts),
    }


def main(questions: int = QUESTIONS) -> dict[str, Any]:
    warn_if_busy()
    steps = build_script(candidate_files(django_repo()), questions)
    digest = hashlib.sha256(repr(steps).encode()).hexdigest()[:16]
    figures: dict[str, Any] = {
        "config": {
            "questions": questions,
            "max_context_tokens": BUDGET_TOKENS,
            "compaction_threshold": COMPACTION_THRESHOLD,
            "repository": "django-5.1.4 sdist (bench/.cache)",
            "tees": sum(len(s.tees) for s in steps),
            "edits": sum(len(s.edits) for s in steps),
            "questions_with_tools": sum(1 for s in steps if s.plan),
            "seed": SEED,
            "workload_digest": digest,
            "naive_baseline": (
                "same logical content replayed to a fresh fake with the same rules: volatile block re-rendered "
                "in place every question (no freeze, no deltas) + FIFO front truncation at 0.85 x budget; same "
                "breakpoint positions; on the OpenAI protocol stable and volatile text are two system messages"
            ),
            "ideal": "longest common block prefix with the previous request of the same kind, fake token units",
        },
        "simulations": {},
    }
    # The three simulations are independent (own fake, server, repository copy and data dir): run them in
    # parallel child processes. Only token counts are reported, so CPU contention changes no figure.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(SIMULATIONS), mp_context=context) as pool:
        futures = {s.name: pool.submit(simulate, s.name, questions) for s in SIMULATIONS}
        for name, future in futures.items():
            figures["simulations"][name] = future.result()
    for name, sim in figures["simulations"].items():
        lm, naive = sim["live_memory"], sim["naive"]
        rows = [
            ("cache share, question requests", lm["cache_read_share_questions"], naive["cache_read_share_questions"]),
            ("cache share, incl. summarizer", lm["cache_read_share_all"], naive["cache_read_share_all"]),
            ("ideal share, question requests", lm["ideal_share_questions"], naive["ideal_share_questions"]),
            ("ideal share, incl. summarizer", lm["ideal_share_all"], naive["ideal_share_all"]),
            ("ideal (any earlier) share", lm["ideal_any_share_questions"], naive["ideal_any_share_questions"]),
            ("cost per question, USD", lm["cost_per_question_usd"], naive["cost_per_question_usd"]),
            (
                "  same, question requests only",
                lm["cost_per_question_questions_only_usd"],
                naive["cost_per_question_questions_only_usd"],
            ),
            (
                "  same, if nothing were cached",
                lm["cost_per_question_if_uncached_usd"],
                naive["cost_per_question_if_uncached_usd"],
            ),
            ("prompt tokens (questions)", lm["prompt_tokens_questions"], naive["prompt_tokens_questions"]),
            (
                "question / tool-loop requests",
                f"{lm['question_requests']}/{lm['tool_loop_requests']}",
                (f"{naive['question_requests']}/{naive['tool_loop_requests']}"),
            ),
            ("summarizer requests", lm["summarizer_requests"], naive["summarizer_requests"]),
            ("compactions / truncating questions", lm["compactions"], naive["questions_with_truncation"]),
            ("questions", lm["questions"], naive["questions"]),
        ]
        print_table(
            ["metric", "Live Memory", "naive"],
            rows,
            title=f"{name}: {sim['model']} ({sim['cache_rules']} rules), session {lm['seconds']} s (3 in parallel)",
        )
        ratios = sim["ratios"]
        print(
            f"  naive costs {ratios['cost_naive_over_live_memory']}x Live Memory per question; "
            f"Live Memory serves {ratios['share_points_over_naive']:+.2f} points more of its prompt from cache"
        )
        for line in sim["analysis"]:
            print(f"  {line}")
        if lm["compactions"] < MIN_COMPACTIONS:
            print(f"  WARNING: only {lm['compactions']} compactions (wanted >= {MIN_COMPACTIONS})")
        if lm["errors"] or lm["plan_mismatches"]:
            print(f"  WARNING: {lm['errors']} errors, {lm['plan_mismatches']} questions deviated from their tool plan")
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
