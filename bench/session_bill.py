"""Session bill: what a Claude Code user pays over whole sessions, with no memory, with Live Memory, or with
the Explore subagent, on the same task sequence.

Arms (same tasks, same edits, same virtual clock rules; each arm has its own caches)
    A  no memory: the main agent Greps (when a needed file was never read this session), then Reads the
       decoys it opens while locating and each needed file it does not hold, in one parallel turn. Results
       stay in its context until compaction.
    B  Live Memory: the main agent asks once per exploration task (one `ask_live_memory` call through the
       official MCP client to the real server, `live-memory serve` in its own process); the server's model is
       the fake provider with a scripted model (strict or trusting, below); the hooks' tees (each Read's
       content, each Edit's new content, the FileChanged event) go to `POST /notify` as hooks/notify.py sends
       them. The main agent reads nothing for a question; the answer enters its context.
    C  Explore subagent: one Agent call per exploration task; a fresh context (~6.6k-token head) Greps, Reads
       the decoys and the needed files, and reports an answer of the same text as B's; for a "where is X
       defined" question it Greps in content mode and reads nothing. Priced two ways: on Haiku (the Agent
       call names the model) and inheriting the main model (Claude Code 2.1.332's default: its built-in
       Explore agent is defined with model "inherit").
    In every arm an edit task Reads the file (unless its current content is in context), then Edits it; where
    an answer (B's or C's, the same text) cited the lines to change in a file larger than a small one, the
    Read is that window (Claude Code accepts an Edit after a partial Read). Every task ends with the same
    reply to the user.

Main agent (simulated Claude Code): ~22k tokens of tools + system on every request (+ the plugin's ask tool and
context lines in B, measured from their real texts). Tool results as Claude Code 2.1.332 returns them (checked
against the real CLI by tests/plugin/test_claude_code_observed.py): a Read numbers each line (`12<TAB>text`),
capped at 2000 lines / 25k tokens; an Edit returns a one-line confirmation; an Explore report comes inside the
"[Subagent hand-back]" frame, its lines indented (the foreground form; the default background form costs the
main agent more). Breakpoints on the system blocks and the last message; compaction when a
request would pass 200k tokens ("prompt is too long" is not billed): a compaction request over the
conversation that last fit, a ~3k-token summary, then the summary + the last file read (re-attached) + the
task. Priced at Sonnet 4.5 and at Opus 4.5; the memory and the subagent at Haiku 4.5.

Cache: the Anthropic rules of live_memory/testing/llm_server.py for every client (blocks counted at ceil(chars/4),
breakpoints where each client puts them, 20-block lookback, 5-minute TTL refreshed on hit, the model's
minimum cacheable prefix), on one virtual clock per arm, which the server under test keeps too
(bench/virtual_serve.py): user think time 30/120/600 s (40/40/20 %) before each task, 6 s per main-agent
request, 3 s per subagent or memory request, 1 h between sessions.

Memory models (the scripted model that answers the real server)
    strict    Reads what the question needs of every file whose current bytes the prompt does not show: the
              definition's lines when the prompt gives them and they can be relied on (a lookup made for this
              question, or lines whose file hash matches the file), else the whole file.
    trusting  skips that Read when an earlier answer or ledger fact names the file and no change notice for it
              follows. A real model sits between the two; both are reported.
    Both search whenever they must read a file whose location they were not told for this task (no line of
    their context names the file with the name asked about; an unrelated mention of the path does not count),
    with the server's find_symbol when it offers one, else with Grep (then they open the task's decoys too).
    A "where is X defined" question needs the definition's lines: answered at once when the prompt gives them,
    else after one search. They answer with the task's answer text; summarizer requests, standalone or folds
    that continue the conversation, get the ledger's changes (a fact per newly named file, read from the same
    material either way).

Workloads: tasks needing 0-4 files (10/35/30/15/10 %), drawn with Zipf locality over directories then files
(exponent 1.4 / 1.0 / 0.5 for high / medium / low), from the smallest 40 % / all / the largest 40 % of the
eligible files (small / natural / large); 30 % of the tasks with files edit the first one (asking which lines
to change: "edit"), 35 % of the other one-file tasks ask where a name is ("locate": where it is defined, or
for 40 % of them who uses it: "uses"), the rest how code works ("explain"); answers cite each definition's
lines as the earlier edits left them; 0-2 decoys per task (40/40/20 %), and decoy-free control rows
(`-nodecoy`: the same tasks, no decoy opened). Sessions: one of 10/30/60/120 tasks, or 3 x 20 and 6 x 10;
three more 120-task sequences, and the first one run from each tenth of the way in (its rotations), for the
trend of cost per question as the memory learns with the task order cancelled out. Repositories: this checkout
(`git ls-files`, .py and .md files eligible) and the Django 5.1.4 sdist (django/**/*.py eligible).

Figures per workload and arm: requests, tokens (uncached / cache write / cache read / output), USD (main at
Sonnet and Opus, the helper at Haiku), cost per task and per question by decile of the session, break-even
task counts, the spend by prompt-block kind, Reads that re-read a file version read for an earlier task, and
cache-written tokens no later request read.

Run: `python -m bench.session_bill` (about 5 minutes on 2 cores; writes bench/results/session_bill.json),
`--quick` (a few seconds, this checkout only), `--server-src PATH/server --server-python PY` to measure
another checkout's server. Then `python -m bench.report` regenerates docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import re
import runpy
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from bench.bill_agents import (
    PROJECT_ROOT,
    SMALL_FILE_TOKENS,
    Files,
    MainAgent,
    SelfExplorer,
    SubagentExplorer,
    claude_code_prefix,
    explore_prefix,
    version,
)
from bench.bill_cache import PRICES, CacheSim, Ledger, VirtualClock, price_dict, recorded_call
from bench.bill_content import CONTENT_KINDS
from bench.bill_memory import (
    MemoryExplorer,
    MemoryModel,
    ServerCommand,
    ServerProcess,
    classify_memory,
    copy_workspace,
    fake_provider,
    norm_path,
    read_calls,
)
from bench.bill_workload import (
    DECOY_WEIGHTS,
    EDIT_SHARE,
    FILES_PER_TASK_WEIGHTS,
    LOCALITY_ZIPF,
    QUESTION_KINDS,
    ROTATIONS,
    THINK_TIMES_S,
    THINK_WEIGHTS,
    Repo,
    Task,
    Workload,
    apply_edit,
    build_tasks,
    load_repo,
    workload,
)
from bench.common import (
    McpAsker,
    cumulative,
    first_index_staying_below,
    map_jobs,
    print_table,
    warn_if_busy,
    write_results,
)
from bench.provenance import write_json
from live_memory.providers.pricing import Price
from live_memory.testing.prompt_blocks import count_tokens

NAME = "session_bill"
RUNS_DIR = Path(__file__).parent / ".cache" / "session-bill-runs"  # beside the Django copy: hard links work
SEED = 20_260_301
MODES = ("strict", "trusting")
DECILES = 10
TREND_SEQUENCES = 4  # 120-task sequences averaged for the trend of cost per question over a session
REPOS = ("live-memory", "django")
BASE = workload("medium", "natural", (60,))
FULL_WORKLOADS = (
    BASE,
    workload("high", "natural", (60,)),
    workload("low", "natural", (60,)),
    workload("medium", "small", (60,)),
    workload("medium", "large", (60,)),
    workload("high", "small", (60,)),
    workload("medium", "natural", (10,)),
    workload("medium", "natural", (30,)),
    workload("medium", "natural", (120,)),
    workload("medium", "natural", (20, 20, 20)),
    # Control rows: the same tasks with no decoy opened while locating (decoys weigh on every arm but B's
    # knowledge, so these show the margin without them).
    workload("medium", "natural", (60,), decoys=False),
    workload("low", "natural", (60,), decoys=False),
    workload("medium", "natural", (10,) * 6),
    # Content rows: the same draws with 40% of the questions that touch files asking for the bodies of files (a
    # file's walkthrough or review, a directory's files on a topic from their prose, and the same need asked
    # again later), decoy-free (bench/bill_content.py).
    *(workload(locality, "natural", (60,), content=True) for locality in ("medium", "low", "high")),
    workload("medium", "natural", (20, 20, 20), content=True),
    workload("medium", "natural", (10,) * 6, content=True),
    # More 120-task sequences: one sequence's deciles swing with its task mix (which files, how large).
    *(workload("medium", "natural", (120,), variant=v) for v in range(1, TREND_SEQUENCES)),
    # The first sequence started at each tenth of the way in: together they put every one of its tasks in every
    # decile, so the trend of cost per question over their mean is the memory's own, not the task order's.
    *(workload("medium", "natural", (120,), rotation=r) for r in range(1, ROTATIONS)),
)
QUICK_WORKLOADS = (workload("medium", "natural", (6, 6), content=True),)
# Server options every run sets: the OS watcher off (the hooks' FileChanged events report the edits, in a
# deterministic order) and no distillation cooldown (it counts real seconds; a real session spreads these
# tasks over hours). Everything else is the server's own default.
SERVER_OPTIONS = {"watch": "false", "distill_min_interval_s": "0"}

LIMITS = (
    "The models are scripted: this measures what is sent, held and cached, not answer quality; a real model "
    "may explore more or less. Strict and trusting bracket a real memory model's reading.",
    "The main agent and the subagent are simulations of Claude Code's requests (sizes from observed runs, "
    "filler text); only arm B's memory side is the real server. Token counts are ceil(chars/4) per block.",
    "Every arm's exploration is idealised the same way: the Grep pattern finds the files and a task's decoys are "
    "opened once. Only an explorer told a definition's lines reads just those lines: the memory, from its symbol "
    "lookups; the main agent and the subagent, whose searches name files, read whole files.",
    "The main agent in A knows where every file it read this session is (it never greps for them again); in B "
    "and C it trusts the answer for questions and reads only the file it edits, and, as the skill says, it "
    f"delegates no task whose files it holds, nor the edit of a small file it has read (<= {SMALL_FILE_TOKENS:,} "
    "tokens).",
    "The OS watcher is off in the server (the hooks' FileChanged events report the edits); the server keeps "
    "running across sessions (a long-running service); the fake provider has no rate limits or latency.",
    "Every process keeps the run's virtual time: the simulated clients, the fake provider's cache, and the "
    "server under test (started by bench/virtual_serve.py with a clock that reads the replay's time), so the "
    "server's cache estimates (whether a fold still reads the cached conversation) see the same hour between "
    "sessions the provider does.",
    "Tool results follow Claude Code 2.1.332 (a test checks the Read, Edit and Explore renderings against it); "
    "its main head measured ~12.7k tokens, not the ~22k modelled, which would weigh the helpers' spend more. "
    "Its Explore agent describes itself as reading excerpts; here it reads the files its Grep lists whole.",
)


# -- one arm's figures -------------------------------------------------------------------------------------
def _usage(ledger: Ledger) -> dict[str, Any]:
    total = ledger.totals()
    prompt = total.uncached + total.write + total.read
    return {
        "requests": len(ledger.calls),
        "prompt_tokens": prompt,
        "uncached_tokens": total.uncached,
        "cache_write_tokens": total.write,
        "cache_write_1h_tokens": total.write_1h,
        "cache_read_tokens": total.read,
        "output_tokens": total.output,
        "cache_read_share": round(total.read / prompt, 4) if prompt else 0.0,
        # Of the prompt tokens that went through the cache (written or read), the share read: a new tool
        # result sent once, uncached on purpose (no later request reads it), is left out.
        "cache_hit_share": round(total.read / (total.read + total.write), 4) if total.read + total.write else 0.0,
        "never_read_cache_write_tokens": ledger.never_read_writes(),
    }


def _kinds(ledger: Ledger, price: Price) -> dict[str, dict[str, Any]]:
    kinds = ledger.by_kind()
    total = sum(k.cost(price) for k in kinds.values()) or 1.0
    out: dict[str, dict[str, Any]] = {}
    for label, spend in sorted(kinds.items(), key=lambda kv: -kv[1].cost(price)):
        out[label] = {
            "usd": round(spend.cost(price), 6),
            "share": round(spend.cost(price) / total, 4),
            "prompt_tokens": spend.uncached + spend.write + spend.read,
            "cache_read_tokens": spend.read,
            "cache_write_tokens": spend.write,
            "output_tokens": spend.output,
        }
    return out


def deciles(values: Sequence[float], mask: Sequence[bool] | None = None) -> list[float | None]:
    """Mean of `values` (where `mask` holds) in each tenth of the sequence, in order."""
    n = len(values)
    out: list[float | None] = []
    for d in range(DECILES):
        lo, hi = d * n // DECILES, (d + 1) * n // DECILES
        picked = [values[i] for i in range(lo, hi) if mask is None or mask[i]]
        out.append(round(sum(picked) / len(picked), 6) if picked else None)
    return out


def break_even(ours: Sequence[float], theirs: Sequence[float]) -> int | None:
    """The first task count from which `ours` (cumulative) stays below `theirs`; None if it ends above."""
    start = first_index_staying_below(ours, theirs)
    return None if start is None else start + 1


@dataclass
class ArmRun:
    name: str
    tasks: Sequence[Task]
    main: Ledger
    helper: Ledger | None
    helper_label: str
    main_reads: Any
    helper_reads: tuple[int, int]  # (reads, rereads)
    compactions: int
    extra: dict[str, Any] = field(default_factory=dict)
    delegated: frozenset[int] = frozenset()  # tasks the helper was asked about

    def figures(self) -> dict[str, Any]:
        n = len(self.tasks)
        helper_usd = self.helper.per_task(n, PRICES["haiku"]) if self.helper else [0.0] * n
        # Per question actually delegated: B and C skip tasks the agent can do from what it holds.
        questions = [t.index in self.delegated for t in self.tasks]
        q = sum(questions)
        out: dict[str, Any] = {"arm": self.name}
        main: dict[str, Any] = _usage(self.main)
        main.update(
            {"compactions": self.compactions, "reads": self.main_reads.reads, "rereads": self.main_reads.rereads}
        )
        for model in ("sonnet", "opus"):
            per_task = self.main.per_task(n, PRICES[model])
            main[f"usd_{model}"] = round(sum(per_task), 6)
            total = [a + b for a, b in zip(per_task, helper_usd, strict=True)]
            out[f"total_usd_{model}"] = round(sum(total), 6)
            out[f"per_task_usd_{model}"] = [round(v, 6) for v in total]
            out[f"deciles_per_task_usd_{model}"] = deciles(total)
        main["by_kind_sonnet"] = _kinds(self.main, PRICES["sonnet"])
        out["main"] = main
        if self.helper is not None:
            helper = _usage(self.helper)
            helper["usd"] = round(sum(helper_usd), 6)
            helper["usd_per_question"] = round(sum(helper_usd) / q, 6) if q else 0.0
            helper["questions"] = q
            helper.update(_rounds(self.helper, self.tasks, self.delegated))
            helper["by_question_kind"] = _by_kind_of_question(self.helper, self.tasks, self.delegated)
            if self.helper_label == "subagent":
                # Claude Code's Explore agent inherits the session's model unless the Agent call names one
                # (docs/benchmarks.md gives the source): the same requests priced at the main model.
                for model in ("sonnet", "opus"):
                    inherited = self.helper.per_task(n, PRICES[model])
                    main_usd = self.main.per_task(n, PRICES[model])
                    out[f"total_usd_{model}_inherit"] = round(sum(main_usd) + sum(inherited), 6)
                    out[f"per_task_usd_{model}_inherit"] = [
                        round(a + b, 6) for a, b in zip(main_usd, inherited, strict=True)
                    ]
                    helper[f"usd_per_question_inherit_{model}"] = round(sum(inherited) / q, 6) if q else 0.0
                helper["usd_per_question_inherit"] = helper["usd_per_question_inherit_sonnet"]
            helper["reads"], helper["rereads"] = self.helper_reads
            helper["by_kind"] = _kinds(self.helper, PRICES["haiku"])
            helper["deciles_per_question_usd"] = deciles(helper_usd, questions)
            helper["per_task_usd"] = [round(v, 6) for v in helper_usd]
            out[self.helper_label] = helper
        out.update(self.extra)
        return out


UPKEEP_LABEL = "ledger upkeep (summarizer)"


def _answering(call: Any) -> bool:
    """A request made to answer a question (not the memory's ledger upkeep)."""
    return any(label != UPKEEP_LABEL for pieces in call.labels for label, _ in pieces)


def _rounds(ledger: Ledger, tasks: Sequence[Task], delegated: frozenset[int]) -> dict[str, Any]:
    """Requests per question asked, and tool rounds (requests that ended in tool calls rather than the answer):
    each round is a wait the user sees."""
    asked = [t.index for t in tasks if t.index in delegated]
    requests = [c for c in ledger.calls if c.task in delegated and _answering(c)]
    by_task: dict[int, int] = {}
    for call in requests:
        by_task[call.task] = by_task.get(call.task, 0) + 1
    after = [by_task.get(i, 0) for i in asked[20:]]
    return {
        "requests_per_question": round(len(requests) / len(asked), 3) if asked else None,
        "tool_rounds_per_question": round((len(requests) - len(by_task)) / len(asked), 3) if asked else None,
        "requests_per_question_after_20": round(sum(after) / len(after), 3) if after else None,
        "single_request_share": round(sum(1 for i in asked if by_task.get(i) == 1) / len(asked), 3) if asked else None,
    }


def _by_kind_of_question(ledger: Ledger, tasks: Sequence[Task], delegated: frozenset[int]) -> dict[str, Any]:
    """Cost, requests and tool rounds per question of each kind (locate, uses, explain, edit, and the content
    kinds), at Haiku prices; a question answered with no request (an earlier answer given again) counts 0."""
    kind_of = {t.index: t.kind for t in tasks}
    usd: dict[str, float] = {}
    requests: dict[str, int] = {}
    answered: dict[str, set[int]] = {}  # per kind, the questions that sent at least one request
    for call in ledger.calls:
        if call.task in delegated:
            kind = kind_of[call.task]
            usd[kind] = usd.get(kind, 0.0) + call.cost(PRICES["haiku"])
            if _answering(call):
                requests[kind] = requests.get(kind, 0) + 1
                answered.setdefault(kind, set()).add(call.task)
    out: dict[str, Any] = {}
    for kind in QUESTION_KINDS:
        n = sum(1 for t in tasks if t.kind == kind and t.index in delegated)
        if n:
            sent = requests.get(kind, 0)
            out[kind] = {
                "questions": n,
                "usd_per_question": round(usd.get(kind, 0.0) / n, 6),
                "requests_per_question": round(sent / n, 3),
                "tool_rounds_per_question": round((sent - len(answered.get(kind, ()))) / n, 3),
            }
    return out


# -- the arms ----------------------------------------------------------------------------------------------
def run_no_memory(repo: Repo, tasks: Sequence[Task]) -> ArmRun:
    clock = VirtualClock()
    files = Files(dict(repo.files))
    ledger = Ledger("main")
    agent = MainAgent(
        "A",
        files,
        CacheSim(clock, "sonnet"),
        ledger,
        clock,
        SelfExplorer(),
        prefix_for=lambda s: claude_code_prefix(session=s),
    )

    async def play() -> None:
        for task in tasks:
            await agent.run_task(task)

    asyncio.run(play())
    return ArmRun("A", tasks, ledger, None, "", agent.reads, (0, 0), agent.compactions)


def run_subagent(repo: Repo, tasks: Sequence[Task]) -> ArmRun:
    clock = VirtualClock()
    files = Files(dict(repo.files))
    ledger, sub_ledger = Ledger("main"), Ledger("subagent")
    explorer = SubagentExplorer(files, CacheSim(clock, "haiku"), sub_ledger, clock)
    agent = MainAgent(
        "C",
        files,
        CacheSim(clock, "sonnet"),
        ledger,
        clock,
        explorer,
        prefix_for=lambda s: claude_code_prefix(session=s),
    )

    async def play() -> None:
        for task in tasks:
            await agent.run_task(task)

    asyncio.run(play())
    return ArmRun(
        "C",
        tasks,
        ledger,
        sub_ledger,
        "subagent",
        agent.reads,
        (explorer.reads.reads, explorer.reads.rereads),
        agent.compactions,
        {"subagent_head_tokens": explore_prefix().tokens},
        frozenset(agent.delegated),
    )


def run_memory(
    repo: Repo,
    loads: Sequence[Workload],
    modes: Sequence[str],
    command: ServerCommand,
    options: dict[str, str],
    seed: int,
) -> dict[str, dict[str, ArmRun]]:
    """Arm B, {workload name: {"B-<mode>": run}}, for each memory model over several workloads against one
    server process: each (model, workload) in its own copy of the repository (so its own workspace memory),
    with its own virtual clock, scripted model and a cold cache."""
    out: dict[str, dict[str, ArmRun]] = {}
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"bill-{repo.name}-", dir=RUNS_DIR) as name:
        tmp = Path(name).resolve()
        clock = VirtualClock(publish=tmp / "virtual-clock")
        with (
            fake_provider(clock) as fake,
            ServerProcess(command, fake.base_url, tmp, {**SERVER_OPTIONS, **options}) as server,
        ):
            for mode in modes:
                for load in loads:
                    tasks = build_tasks(repo, load, seed)
                    workspace = copy_workspace(repo, tmp / mode / load.name)
                    # Each run's clock starts a day after the last one ended: the server's clock never runs
                    # backwards, and no cache outlives the gap.
                    clock = VirtualClock(clock.now + 86_400.0, publish=server.clock_file)
                    out.setdefault(load.name, {})[f"B-{mode}"] = memory_workload(
                        repo, tasks, mode, fake, server, workspace, clock
                    )
    return out


async def plugin_head(asker: McpAsker, checkout: Path) -> tuple[str, str]:
    """What the plugin adds to every main-agent request, from the real texts: the tool definitions the server
    lists, and the context (the server's instructions, the skill's listing line, the SessionStart line)."""
    tools, instructions = await asker.tool_definitions()
    skill = (checkout / "skills" / "live-memory" / "SKILL.md").read_text(encoding="utf-8")
    found = re.search(r'^description:\s*"?(.*?)"?\s*$', skill, re.MULTILINE)
    line = runpy.run_path(str(checkout / "hooks" / "notify.py"))["context_line"](PROJECT_ROOT.rstrip("/"))
    listing = f"- live-memory: {found.group(1) if found else ''}"
    return tools, "\n".join((instructions, listing, line))


def memory_workload(
    repo: Repo,
    tasks: Sequence[Task],
    mode: str,
    fake: Any,
    server: ServerProcess,
    repo_dir: Path,
    clock: VirtualClock,
) -> ArmRun:
    fake.clock = clock
    fake.reset_cache()
    model = MemoryModel(repo_dir, repo, tasks, mode, clock)
    fake.responder = model
    start = len(fake.requests)
    ledger, lm_ledger = Ledger("main"), Ledger("memory")
    files = Files(dict(repo.files), disk=repo_dir)
    root = str(repo_dir) + "/"  # the server's view; the main agent names files under PROJECT_ROOT as in A and C
    marks: list[tuple[int, int]] = []
    final_stats: dict[str, Any] = {}
    head: dict[str, str] = {}

    async def play() -> tuple[MainAgent, MemoryExplorer]:
        # One MCP session for the whole run (a new Claude Code session would open its own; that costs no
        # model tokens), so the run does not wait on session set-up.
        async with httpx2.AsyncClient(base_url=server.url, timeout=120) as http, McpAsker(server.mcp_url) as asker:
            explorer = MemoryExplorer(asker, http, str(repo_dir))
            tools, context = await plugin_head(asker, server.command.src.parent)
            head["tools"], head["context"] = tools, context
            agent = MainAgent(
                "B",
                files,
                CacheSim(clock, "sonnet"),
                ledger,
                clock,
                explorer,
                prefix_for=lambda s: claude_code_prefix(tools, context, s),
            )
            for task in tasks:
                explorer.session_id = f"bench-session-{task.session}"
                first = len(fake.requests)
                await agent.run_task(task, explorer.tee)
                marks.append((first, len(fake.requests)))
            final_stats.update((await http.get("/stats", params={"cwd": str(repo_dir)})).json())
            final_stats["team"] = (await http.get("/stats")).json()["server"]["team"]
        return agent, explorer

    agent, explorer = asyncio.run(play())
    for path, text in files.texts.items():  # the edits reached the disk the server reads
        if (repo_dir / path).read_text(encoding="utf-8") != text:
            raise RuntimeError(f"{path} on disk differs from the arm's view of it")
    classify = classify_memory(model.questions, root)
    reads = rereads = 0
    seen: dict[tuple[str, str], int] = {}
    mirror = dict(repo.files)
    read_ids: set[str] = set()  # every Read reaches the model in a request: the model's, and those the server made
    for task, (lo, hi) in zip(tasks, marks, strict=True):
        for record in fake.requests[lo:hi]:
            if record.usage is None:
                continue
            asked = tuple(norm_path(path, root) for call, path in read_calls(record.body) if call not in read_ids)
            read_ids.update(call for call, _ in read_calls(record.body))
            lm_ledger.add(
                recorded_call("memory", task.index, record.body, record.usage, "claude-haiku-4-5", classify, asked)
            )
            for path in asked:
                if path in mirror:
                    key = (path, version(mirror[path]))
                    reads += 1
                    rereads += int(seen.setdefault(key, task.index) < task.index)
        if task.edit is not None:
            mirror[task.edit.path] = apply_edit(mirror[task.edit.path], task.edit)
    failed = sum(1 for r in fake.requests[start:] if r.usage is None)
    workspace = final_stats.get("workspace") or {}
    return ArmRun(
        f"B-{mode}",
        tasks,
        ledger,
        lm_ledger,
        "memory",
        agent.reads,
        (reads, rereads),
        agent.compactions,
        {
            "memory_model": mode,
            "ask_errors": explorer.errors,
            "wrong_answers": len(explorer.wrong),
            "failed_provider_requests": failed,
            "unscripted_requests": model.unknown,
            "summarizer_requests": model.summaries,
            "notify_events_accepted": explorer.notify_accepted,
            "notify_events_ignored": explorer.notify_ignored,
            "server_compactions": workspace.get("compactions"),
            "server_reported_cost_usd": workspace.get("cost_usd"),
            "server_final_fill": (workspace.get("fill") or {}).get("ratio"),
            # Questions given this memory's earlier answer again, with no model call (reuse_answers).
            "answers_given_again": workspace.get("answers_given_again"),
            # Questions answered from a teammate's answer, with no model call (team_share_answers).
            "team_answers_reused": final_stats["team"].get("answers_reused", 0),
            "plugin_head_tokens": {"tools": count_tokens(head["tools"]), "context": count_tokens(head["context"])},
        },
        frozenset(agent.delegated),
    )


# -- one workload ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """A piece of the run: the simulated arms A and C of one workload ("sim"), or arm B with one memory model
    ("strict") or several ("strict+trusting") over several workloads (one server process)."""

    repo: str
    loads: tuple[Workload, ...]
    part: str
    command: ServerCommand
    options: tuple[tuple[str, str], ...]
    seed: int


def run_job(job: Job) -> tuple[Job, dict[str, dict[str, Any]], float]:
    """{workload name: {arm: figures}} and the seconds it took."""
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    repo = load_repo(job.repo)
    out: dict[str, dict[str, Any]] = {}
    if job.part == "sim":
        for load in job.loads:
            tasks = build_tasks(repo, load, job.seed)
            out[load.name] = {"A": run_no_memory(repo, tasks).figures(), "C": run_subagent(repo, tasks).figures()}
    else:
        runs = run_memory(repo, job.loads, job.part.split("+"), job.command, dict(job.options), job.seed)
        out = {name: {arm_name: arm.figures() for arm_name, arm in arms.items()} for name, arms in runs.items()}
    return job, out, time.perf_counter() - started


def describe(repo: Repo, load: Workload, tasks: Sequence[Task]) -> dict[str, Any]:
    needed = [p for t in tasks for p in t.files]
    return {
        "repo": repo.name,
        "workload": load.name,
        "sequence": load.sequence,
        "rotation": load.rotation,
        "locality": load.locality,
        "sizes": load.sizes,
        "sessions": list(load.sessions),
        "tasks": len(tasks),
        "questions": sum(1 for t in tasks if t.files),
        "edits": sum(1 for t in tasks if t.edit),
        "files_needed": len(needed),
        "distinct_files": len(set(needed)),
        "decoys": load.decoys,
        "content": load.content,
        "decoys_opened": sum(len(t.decoys) for t in tasks),
        "question_kinds": {k: sum(1 for t in tasks if t.kind == k) for k in QUESTION_KINDS},
        "needed_file_tokens_mean": round(sum(len(repo.files[p]) / 4 for p in needed) / max(1, len(needed))),
    }


def compare(arms: dict[str, Any]) -> dict[str, Any]:
    """The headline ratios of one workload, per memory model, at Sonnet and Opus prices."""
    a, c = arms["A"], arms["C"]
    out: dict[str, Any] = {}
    for name, b in arms.items():
        if not name.startswith("B-"):
            continue
        mode = name[2:]
        figures: dict[str, Any] = {
            "memory_over_subagent_per_question": _ratio(
                b["memory"]["usd_per_question"], c["subagent"]["usd_per_question"]
            ),
            "memory_cache_read_share": b["memory"]["cache_read_share"],
            "memory_cache_hit_share": b["memory"]["cache_hit_share"],
            "memory_decile_last_over_first": _first_last(b["memory"]["deciles_per_question_usd"]),
            # The same questions cost the subagent (a fresh context each time) what their files cost; so its
            # trend is the task mix's, and memory / subagent per decile is the memory's own trend as it learns.
            "subagent_decile_last_over_first": _first_last(c["subagent"]["deciles_per_question_usd"]),
            "memory_over_subagent_by_decile": [
                _ratio(m, sub)
                for m, sub in zip(
                    b["memory"]["deciles_per_question_usd"], c["subagent"]["deciles_per_question_usd"], strict=True
                )
            ],
        }
        figures["memory_over_subagent_inherit_per_question"] = _ratio(
            b["memory"]["usd_per_question"], c["subagent"].get("usd_per_question_inherit")
        )
        # The content questions alone (walkthrough, review, area, follow-up): what a content row is about.
        figures["memory_over_subagent_per_content_question"] = _ratio(
            per_content_question(b["memory"]["by_question_kind"]),
            per_content_question(c["subagent"]["by_question_kind"]),
        )
        first, last = _first_and_last(b["memory"]["per_task_usd"], c["subagent"]["per_task_usd"], 20)
        figures["memory_over_subagent_first_20"], figures["memory_over_subagent_last_20"] = first, last
        figures["memory_over_subagent_last_over_first_20"] = _ratio(last, first)
        figures["memory_over_subagent_by_third"] = _by_third(b["memory"]["per_task_usd"], c["subagent"]["per_task_usd"])
        for model in ("sonnet", "opus"):
            figures[f"b_over_a_{model}"] = _ratio(b[f"total_usd_{model}"], a[f"total_usd_{model}"])
            figures[f"b_over_c_{model}"] = _ratio(b[f"total_usd_{model}"], c[f"total_usd_{model}"])
            figures[f"b_over_c_inherit_{model}"] = _ratio(b[f"total_usd_{model}"], c.get(f"total_usd_{model}_inherit"))
            ours = cumulative(b[f"per_task_usd_{model}"])
            figures[f"break_even_vs_a_{model}"] = break_even(ours, cumulative(a[f"per_task_usd_{model}"]))
            figures[f"break_even_vs_c_{model}"] = break_even(ours, cumulative(c[f"per_task_usd_{model}"]))
        out[mode] = figures
    for name, arm in arms.items():
        first, last = arm["deciles_per_task_usd_sonnet"][0], arm["deciles_per_task_usd_sonnet"][-1]
        out.setdefault("decile_last_over_first_sonnet", {})[name] = _ratio(last, first)
    return out


def per_content_question(by_kind: dict[str, Any]) -> float | None:
    """A helper's mean cost per content question (the content kinds together), None without one."""
    kinds = [by_kind[k] for k in CONTENT_KINDS if k in by_kind]
    asked = sum(k["questions"] for k in kinds)
    return sum(k["usd_per_question"] * k["questions"] for k in kinds) / asked if asked else None


def _first_and_last(ours: Sequence[float], theirs: Sequence[float], span: int) -> tuple[Any, Any]:
    """The memory's spend ÷ the subagent's over the first and the last `span` tasks (the same tasks)."""
    if len(ours) < 2 * span:
        return None, None
    return _ratio(sum(ours[:span]), sum(theirs[:span])), _ratio(sum(ours[-span:]), sum(theirs[-span:]))


def _by_third(ours: Sequence[float], theirs: Sequence[float]) -> list[float | None]:
    """The memory's spend ÷ the subagent's in each third of the session (the same tasks)."""
    n = len(ours)
    cuts = [0, n // 3, 2 * n // 3, n]
    return [_ratio(sum(ours[a:b]), sum(theirs[a:b])) for a, b in itertools.pairwise(cuts)]


def _first_last(deciles: Sequence[float | None]) -> float | None:
    """Last decile's mean over the first's (deciles without a question are skipped)."""
    known = [v for v in deciles if v is not None]
    return _ratio(known[-1], known[0]) if known else None


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return None
    return round(a / b, 3)


# -- the whole run -----------------------------------------------------------------------------------------
def run(
    *,
    quick: bool = False,
    repos: Sequence[str] | None = None,
    workloads: Sequence[Workload] | None = None,
    modes: Sequence[str] = MODES,
    command: ServerCommand | None = None,
    options: dict[str, str] | None = None,
    jobs: int = 2,
    seed: int = SEED,
) -> dict[str, Any]:
    command = command or ServerCommand()
    repos = list(repos or (("live-memory",) if quick else REPOS))
    loads = list(workloads or (QUICK_WORKLOADS if quick else FULL_WORKLOADS))
    for name in repos:
        load_repo(name)  # fail early (and download once) before the workers start
    opts = tuple(sorted((options or {}).items()))
    todo = [Job(r, (w,), "sim", command, opts, seed) for r in repos for w in loads]
    # In parallel, one server per memory model; in one process, the models share one (a server start-up less).
    parts = list(modes) if jobs > 1 else ["+".join(modes)]
    todo += [Job(r, tuple(loads), part, command, opts, seed) for r in repos for part in parts]
    todo.sort(key=lambda j: (j.part == "sim", j.repo != "django"))  # the long jobs first
    started = time.perf_counter()
    done = map_jobs(run_job, todo, jobs)
    runs: dict[str, dict[str, Any]] = {}
    for r in repos:
        repo = load_repo(r)
        for w in loads:
            runs[f"{r}/{w.name}"] = {**describe(repo, w, build_tasks(repo, w, seed)), "arms": {}}
    seconds: dict[str, float] = {}
    for job, figures, took in done:
        seconds[f"{job.repo}:{job.part}:{','.join(w.name for w in job.loads) if job.part == 'sim' else 'all'}"] = round(
            took, 1
        )
        for name, arms in figures.items():
            runs[f"{job.repo}/{name}"]["arms"].update(arms)
    for run_ in runs.values():
        run_["arms"] = {name: run_["arms"][name] for name in ("A", "C", *(f"B-{m}" for m in modes))}
        run_["compare"] = compare(run_["arms"])
    results = list(runs.values())
    repo_info = {}
    for name in repos:
        repo = load_repo(name)
        repo_info[name] = {"files": len(repo.files), "eligible": len(repo.eligible), "digest": repo.digest()}
    return {
        "method": (__doc__ or "").split("\n\nRun:")[0].strip(),
        "limits": list(LIMITS),
        "config": {
            "quick": quick,
            "seed": seed,
            "modes": list(modes),
            "repos": repo_info,
            "server": command.describe(),
            "server_options": {**SERVER_OPTIONS, **(options or {})},
            "prices_usd_per_mtok": {k: price_dict(v) for k, v in PRICES.items()},
            "main_head_tokens": {"A_C": claude_code_prefix().tokens},  # B's: each run's plugin_head_tokens
            "subagent_head_tokens": explore_prefix().tokens,
            "files_per_task_weights": list(FILES_PER_TASK_WEIGHTS),
            "edit_share": EDIT_SHARE,
            "decoy_weights": list(DECOY_WEIGHTS),
            "think_times_s": list(THINK_TIMES_S),
            "think_weights": list(THINK_WEIGHTS),
            "locality_zipf": LOCALITY_ZIPF,
        },
        "runs": runs,
        "job_seconds": seconds,
        "headline": headline(results),
        "trend": trend(results),
        "seconds": round(time.perf_counter() - started, 1),
    }


def headline(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures the product is judged on, per repository and memory model."""
    out: dict[str, Any] = {}
    for r in (r for r in results if not r.get("rotation")):  # a rotation is the trend's, not a workload row
        key = f"{r['repo']}/{r['workload']}"
        arms, cmp_ = r["arms"], r["compare"]
        for mode in (m for m in ("strict", "trusting") if m in cmp_):
            b = arms[f"B-{mode}"]
            row = {
                "memory_usd_per_question": b["memory"]["usd_per_question"],
                "subagent_usd_per_question": arms["C"]["subagent"]["usd_per_question"],
                **cmp_[mode],
                "decile_last_over_first_b": cmp_["decile_last_over_first_sonnet"].get(f"B-{mode}"),
                "decile_last_over_first_a": cmp_["decile_last_over_first_sonnet"].get("A"),
                "decile_last_over_first_c": cmp_["decile_last_over_first_sonnet"].get("C"),
                "memory_rereads": b["memory"]["rereads"],
                "memory_reads": b["memory"]["reads"],
                "memory_never_read_cache_write_tokens": b["memory"]["never_read_cache_write_tokens"],
                "memory_cache_write_tokens": b["memory"]["cache_write_tokens"],
            }
            out.setdefault(key, {})[mode] = row
    return out


def trend(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Cost per question by decile of a 120-task session, per memory model and for the subagent, with last ÷
    first decile and second half ÷ first half: the mean over every 120-task sequence of a repository, and under
    "rotations" the mean over one sequence's rotations (every task in every decile once: no task-order swing)."""
    out: dict[str, Any] = {}
    for repo in dict.fromkeys(r["repo"] for r in results):
        runs = [r for r in results if r["repo"] == repo and r["locality"] == "medium" and r["sizes"] == "natural"]
        runs = [r for r in runs if r["sessions"] == [120]]
        sequences = [r for r in runs if not r.get("rotation")]
        if not sequences:
            continue
        figures = {"sequences": len(sequences), **_trend_of(sequences)}
        by_sequence: dict[str, dict[int, dict[str, Any]]] = {}
        for r in runs:
            by_sequence.setdefault(str(r.get("sequence", r.get("workload"))), {})[r.get("rotation", 0)] = r
        # The first sequence run with all its rotations (a partial set would not balance the deciles).
        whole = [name for name, rotations in by_sequence.items() if len(rotations) == ROTATIONS]
        if whole:
            rotated = list(by_sequence[whole[0]].values())
            figures["rotations"] = {"sequence": whole[0], "runs": len(rotated), **_trend_of(rotated)}
        out[repo] = figures
    return out


def _trend_of(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per helper, the mean cost per question in each decile over `runs`, and the ratios that read a trend."""
    helpers = {"subagent": ("C", "subagent")}
    helpers.update({f"memory-{n[2:]}": (n, "memory") for n in runs[0]["arms"] if n.startswith("B-")})
    figures: dict[str, Any] = {}
    for label, (arm, part) in helpers.items():
        columns = zip(*(r["arms"][arm][part]["deciles_per_question_usd"] for r in runs), strict=True)
        means = [_mean([v for v in column if v is not None]) for column in columns]
        figures[label] = {
            "deciles_per_question_usd": [None if m is None else round(m, 6) for m in means],
            "last_over_first": _first_last(means),
            "second_half_over_first_half": _ratio(_mean(means[DECILES // 2 :]), _mean(means[: DECILES // 2])),
        }
    for label in [k for k in figures if k.startswith("memory-")]:
        mine, theirs = figures[label]["deciles_per_question_usd"], figures["subagent"]["deciles_per_question_usd"]
        figures[label]["over_subagent_by_decile"] = [_ratio(m, t) for m, t in zip(mine, theirs, strict=True)]
    return figures


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


# -- printing ----------------------------------------------------------------------------------------------
def _usd(v: Any) -> str:
    return "–" if not isinstance(v, (int, float)) else (f"${v:.4f}" if abs(v) < 1 else f"${v:.2f}")


def _x(v: Any) -> str:
    return "–" if not isinstance(v, (int, float)) else f"{v:.2f}x"


def print_run(r: dict[str, Any]) -> None:
    arms = r["arms"]
    rows = []
    for name, arm in arms.items():
        helper = arm.get("memory") or arm.get("subagent") or {}
        rows.append(
            (
                name,
                arm["main"]["requests"],
                f"{arm['main']['cache_read_share']:.1%}",
                arm["main"]["compactions"],
                _usd(arm["main"]["usd_sonnet"]),
                _usd(helper.get("usd")),
                _usd(helper.get("usd_per_question")),
                f"{helper['cache_read_share']:.1%}" if helper else "–",
                _usd(arm["total_usd_sonnet"]),
                _usd(arm["total_usd_opus"]),
            )
        )
    print_table(
        [
            "arm",
            "main req",
            "main cached",
            "compact",
            "main $ (Sonnet)",
            "helper $",
            "helper $/q",
            "helper cached",
            "total Sonnet",
            "total Opus",
        ],
        rows,
        title=(f"{r['repo']} / {r['workload']}: {r['tasks']} tasks, {r['questions']} questions, {r['edits']} edits"),
    )
    for mode, f in r["compare"].items():
        if mode.startswith("decile"):
            continue
        print(
            f"  B-{mode}: memory/subagent per question {_x(f['memory_over_subagent_per_question'])}, "
            f"B/A {_x(f['b_over_a_sonnet'])} (Opus {_x(f['b_over_a_opus'])}), B/C {_x(f['b_over_c_sonnet'])} "
            f"(Opus {_x(f['b_over_c_opus'])}), break-even vs A after {f['break_even_vs_a_sonnet'] or 'never'} tasks, "
            f"memory cache share {f['memory_cache_read_share']:.1%}"
        )
    for name, arm in arms.items():
        for key in ("ask_errors", "wrong_answers", "failed_provider_requests", "unscripted_requests"):
            if arm.get(key):
                print(f"  WARNING: {name} {key} = {arm[key]}")


def _trend(ratios: Sequence[float | None]) -> str:
    known = [r for r in ratios if r is not None]
    return f"{known[0]:.2f}x -> {known[-1]:.2f}x" if known else "-"


def print_headline(data: dict[str, Any]) -> None:
    rows = []
    for key, modes in data["headline"].items():
        for mode, f in modes.items():
            rows.append(
                (
                    f"{key} {mode}",
                    _usd(f["memory_usd_per_question"]),
                    _usd(f["subagent_usd_per_question"]),
                    _x(f["memory_over_subagent_per_question"]),
                    _x(f["b_over_a_sonnet"]),
                    _x(f["b_over_c_sonnet"]),
                    _x(f["decile_last_over_first_b"]),
                    f"{_x(f['memory_decile_last_over_first'])} ({_x(f['subagent_decile_last_over_first'])})",
                    _trend(f["memory_over_subagent_by_decile"]),
                    f"{f['memory_cache_read_share']:.1%}",
                    f"{f['memory_rereads']}/{f['memory_reads']}",
                )
            )
    print_table(
        [
            "workload / memory model",
            "memory $/q",
            "subagent $/q",
            "mem/sub",
            "B/A",
            "B/C",
            "B last/first decile",
            "memory last/first (subagent)",
            "mem/sub decile 1 -> 10",
            "memory cached",
            "re-reads",
        ],
        rows,
        title="Headline (Sonnet main agent, Haiku memory and subagent)",
    )
    print_trend(data.get("trend") or {})


def print_trend(figures: dict[str, Any]) -> None:
    rows: dict[str, list[tuple[str, ...]]] = {"sequences": [], "rotations": []}
    for repo, f in figures.items():
        for which, part in (("sequences", f), ("rotations", f.get("rotations") or {})):
            for label in (k for k in part if k.startswith(("memory-", "subagent"))):
                means = part[label]["deciles_per_question_usd"]
                rows[which].append(
                    (
                        f"{repo} {label}",
                        " ".join("–" if m is None else f"{m * 1000:.1f}" for m in means),
                        _x(part[label]["last_over_first"]),
                        _x(part[label]["second_half_over_first_half"]),
                    )
                )
    titles = {
        "sequences": "mean of the task sequences ("
        + ", ".join(f"{repo} {f['sequences']}" for repo, f in figures.items())
        + ")",
        "rotations": f"mean of one sequence's {ROTATIONS} rotations (every task in every decile once)",
    }
    for which, table_rows in rows.items():
        if table_rows:
            print_table(
                ["helper", "m$ per question, deciles 1..10", "last/first", "2nd half/1st half"],
                table_rows,
                title=f"Cost per question over a 120-task session, {titles[which]}",
            )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.session_bill", description=__doc__.split("\n")[0] if __doc__ else ""
    )
    parser.add_argument("--quick", action="store_true", help="a small run on this checkout only (seconds)")
    parser.add_argument("--repos", default="", help=f"comma-separated, of {', '.join(REPOS)}")
    parser.add_argument("--workloads", default="", help="comma-separated names like medium-natural-60, low-small-3x20")
    parser.add_argument("--modes", default=",".join(MODES), help="memory models: strict,trusting")
    parser.add_argument("--server-python", default=sys.executable, help="interpreter that runs the server")
    parser.add_argument(
        "--server-src", default=str(ServerCommand().src), help="the server checkout's server/ directory"
    )
    parser.add_argument(
        "--option", action="append", default=[], help="extra server option key=value (LIVE_MEMORY_<KEY>)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="workloads run in parallel")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--out", default="", help="results file (default bench/results/session_bill.json; none for --quick)"
    )
    return parser.parse_args(argv)


_WORKLOAD_NAME = re.compile(
    r"(?P<locality>[a-z]+)-(?P<sizes>[a-z]+)-(?P<shape>\d+(?:x\d+)?)(?:-v(?P<v>[1-9]\d*))?(?:-r(?P<r>[1-9]))?"
    r"(?:(?P<nodecoy>-nodecoy)|(?P<content>-content))?"
)


def parse_workload(name: str) -> Workload:
    match = _WORKLOAD_NAME.fullmatch(name)
    try:
        if match is None:
            raise ValueError(name)
        sessions = [int(x) for x in match["shape"].split("x")]
        shaped = sessions if len(sessions) == 1 else [sessions[1]] * sessions[0]
        return workload(
            match["locality"],
            match["sizes"],
            shaped,
            int(match["v"] or 0),
            int(match["r"] or 0),
            decoys=not match["nodecoy"],
            content=bool(match["content"]),
        )
    except ValueError as exc:
        raise SystemExit(
            f"bad workload name {name!r}: use LOCALITY-SIZES-TASKS or LOCALITY-SIZES-NxTASKS, optionally -vN "
            "(another sequence), then -rN (that sequence started N tenths of the way in; one session only), then "
            "-nodecoy (the same tasks with no decoy files opened) or -content (content questions, decoy-free)"
        ) from exc


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    warn_if_busy()
    command = ServerCommand.given(args.server_python, args.server_src)
    options = dict(o.split("=", 1) for o in args.option)
    loads = [parse_workload(w) for w in args.workloads.split(",") if w] or None
    data = run(
        quick=args.quick,
        repos=[r for r in args.repos.split(",") if r] or None,
        workloads=loads,
        modes=tuple(m for m in args.modes.split(",") if m),
        command=command,
        options=options,
        jobs=args.jobs,
        seed=args.seed,
    )
    for r in data["runs"].values():
        if not r["rotation"]:  # the rotations are read through the trend's table
            print_run(r)
    print_headline(data)
    out = args.out or ("" if args.quick else str(Path(__file__).parent / "results" / f"{NAME}.json"))
    if out:
        path = write_results(NAME, data) if out.endswith(f"results/{NAME}.json") else _write(Path(out), data)
        print(f"\nwrote {path} ({data['seconds']} s)")
    return data


def _write(path: Path, data: dict[str, Any]) -> Path:
    return write_json(path, data)


if __name__ == "__main__":
    main()
