"""A long scripted session through the real server: the prompt prefix only ever grows between
compactions, breakpoints sit where they must, and overflow/staleness are handled end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.core.prompts import NEUTRAL_SUMMARY_SYSTEM_PROMPT, STALE_LEDGER_HEADING
from live_memory.settings.config import Settings
from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.fakes.repo_builder import wide_repo
from tests.kv_invariants import (
    assert_breakpoints,
    assert_folds_repeat_the_conversation,
    assert_prefix_invariant,
    is_fold,
    question_requests,
)

SUMMARY_MARK = NEUTRAL_SUMMARY_SYSTEM_PROMPT[:40]


def is_summary(request: RecordedRequest) -> bool:
    system = request.body.get("system")
    text = system[0]["text"] if system else request.body["messages"][0]["content"]
    return str(text).startswith(SUMMARY_MARK) or is_fold(request.body)


def scripted_settings(fake: FakeLLM, tmp_path: Path, **options: Any) -> Settings:
    """A server on the fake provider with its data under `tmp_path` that accepts a tool-less first answer
    even while the memory is cold (the script, not the server, decides when the model explores)."""
    return settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0, **options)


def retired_questions(request: RecordedRequest) -> list[str]:
    """The questions a summarizer call retires: "Q:" lines of a standalone call, a fold's earlier turns."""
    if not is_fold(request.body):
        return [line[3:] for line in FakeLLM.last_user_text(request.body).splitlines() if line.startswith("Q: ")]
    texts = [FakeLLM.last_user_text({"messages": [m]}) for m in request.body["messages"][:-1]]
    return [text.splitlines()[1] for text in texts if text.startswith("## Question\n")]


def scripted(request: RecordedRequest) -> Reply:
    """Summaries: one fact per retired file/question. Questions: every third one explores first."""
    last = FakeLLM.last_user_text(request.body)
    if is_summary(request):
        facts = [f"- {line[4:]} holds module code" for line in last.splitlines() if line.startswith("### ")]
        facts += [f"- learned from: {q}" for q in retired_questions(request)]
        return Reply.text("\n".join(facts) or "- nothing durable")
    messages = request.body["messages"]
    asked = max(i for i, m in enumerate(messages) if "## Question" in str(m.get("content")))
    answered_tool = any(m["role"] == "tool" or "tool_result" in str(m.get("content")) for m in messages[asked:])
    if "explore" in last and "## Question" in last and not answered_tool:
        return Reply.tool_call("Grep", {"pattern": "def ", "output_mode": "files_with_matches"})
    return Reply.text(f"Answer: {last.splitlines()[1] if '## Question' in last else 'done'}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    for index in range(12):
        (root / "pkg" / f"mod{index}.py").write_text(f"def f{index}():\n    return {index}\n" + "# filler\n" * 200)
    return root


async def notify(server: LiveServer, workspace: Path, events: list[dict[str, Any]]) -> None:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        response = await client.post("/notify", json={"cwd": str(workspace), "events": events})
    assert response.status_code == 200, response.text


async def stats(server: LiveServer, workspace: Path) -> dict[str, Any]:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        return dict((await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"])


async def run_session(server: LiveServer, workspace: Path, questions: int = 30) -> None:
    for index in range(questions):
        verb = "explore" if index % 3 == 0 else "recall"
        text, is_error = await ask_via_mcp(
            server.mcp_url, {"question": f"{verb} question {index}", "cwd": str(workspace)}
        )
        assert not is_error, text
        path = f"pkg/mod{index % 12}.py"
        if index % 4 == 1:
            content = (workspace / path).read_text()
            await notify(server, workspace, [{"path": path, "kind": "read", "content": content}])
        elif index % 4 == 2:
            (workspace / path).write_text((workspace / path).read_text() + f"# edit {index}\n")
            await notify(server, workspace, [{"path": path, "kind": "change"}])
        elif index % 10 == 7:
            await notify(server, workspace, [{"path": path, "kind": "unlink"}])


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
async def test_thirty_questions_keep_the_prefix_append_only_between_compactions(
    workspace: Path, tmp_path: Path, protocol: str
) -> None:
    rules = "anthropic" if protocol == "anthropic" else "openai"
    with FakeLLM(cache_rules=rules, min_cacheable_tokens=256) as fake:  # type: ignore[arg-type]
        fake.responder = scripted
        settings = settings_for(
            fake.base_url,
            tmp_path / "data",
            protocol=protocol,
            max_context_tokens=3000,
            distill_min_interval_s=0,
            hold_files="all",
        )
        with live_server(settings) as server:
            await run_session(server, workspace)
            figures = await stats(server, workspace)
        bodies = [r.body for r in fake.requests]
    assert figures["compactions"] >= 1, figures
    assert figures["fill"]["used_tokens"] <= 3000
    boundaries = assert_prefix_invariant(bodies, compactions=figures["compactions"])
    assert boundaries >= 1
    assert_folds_repeat_the_conversation(bodies, kept=2)
    if protocol == "anthropic":
        for body in question_requests(bodies):
            assert_breakpoints(body)
        reads = sum(r.usage["cache_read_input_tokens"] for r in fake.requests if r.usage and not is_summary(r))
        total = sum(r.prompt_tokens for r in fake.requests if not is_summary(r))
        assert reads / total > 0.6, reads / total


async def test_prompt_too_long_compacts_and_retries(workspace: Path, tmp_path: Path) -> None:
    with FakeLLM(min_cacheable_tokens=256) as fake:
        fake.responder = scripted
        settings = scripted_settings(fake, tmp_path, distill_min_interval_s=0, history_max_tokens=0)
        with live_server(settings) as server:
            for index in range(8):
                await ask_via_mcp(server.mcp_url, {"question": f"recall {index} " + "x" * 3000, "cwd": str(workspace)})
            fake.context_limit_tokens = fake.requests[-1].prompt_tokens - 500  # the real model is smaller
            text, is_error = await ask_via_mcp(server.mcp_url, {"question": "one more", "cwd": str(workspace)})
            figures = await stats(server, workspace)
    assert not is_error, text
    assert text.startswith("Answer: one more")
    assert figures["compactions"] == 1
    assert figures["fill"]["total_tokens"] < 200_000  # the provider's stated limit was adopted


async def test_a_changed_source_demotes_its_ledger_facts_end_to_end(workspace: Path, tmp_path: Path) -> None:
    with FakeLLM(min_cacheable_tokens=256) as fake:
        fake.responder = scripted
        settings = scripted_settings(
            fake, tmp_path, max_context_tokens=3500, distill_min_interval_s=0, hold_files="all"
        )
        with live_server(settings) as server:
            await ask_via_mcp(server.mcp_url, {"question": "warm up", "cwd": str(workspace)})
            events = [
                {"path": f"pkg/mod{i}.py", "kind": "read", "content": (workspace / f"pkg/mod{i}.py").read_text()}
                for i in range(6)
            ]
            await notify(server, workspace, events)
            await ask_via_mcp(server.mcp_url, {"question": "distill please", "cwd": str(workspace)})
            assert (await stats(server, workspace))["ledger_facts"] >= 1
            (workspace / "pkg/mod0.py").write_text("def f0():\n    return 'changed'\n")
            await notify(server, workspace, [{"path": "pkg/mod0.py", "kind": "change"}])
            await ask_via_mcp(server.mcp_url, {"question": "after the change", "cwd": str(workspace)})
            assert "pkg/mod0.py: CHANGED since you read it" in str(fake.requests[-1].body["messages"])
            assert (await stats(server, workspace))["stale_ledger_facts"] >= 1
        with live_server(settings) as server:  # a restart re-renders the frozen block
            await ask_via_mcp(server.mcp_url, {"question": "after restart", "cwd": str(workspace)})
        frozen = fake.requests[-1].body["system"][1]["text"]
    fresh, _, stale = frozen.partition(STALE_LEDGER_HEADING)
    assert "pkg/mod0.py holds module code" in stale
    assert "pkg/mod0.py holds module code" not in fresh
    assert "pkg/mod1.py holds module code" in fresh


async def test_a_large_repository_s_first_question_is_cached_from_its_first_request(tmp_path: Path) -> None:
    # Haiku 4.5 writes no prefix shorter than 4,096 tokens: the tree fills the prompt's head past it, so a new
    # memory's first requests read the head from the cache instead of paying for it in full each time.
    wide = wide_repo(tmp_path)
    with FakeLLM() as fake:  # the provider's own minimum for the model
        fake.responder = scripted
        settings = scripted_settings(fake, tmp_path)
        with live_server(settings) as server:
            for index in range(2):
                text, is_error = await ask_via_mcp(server.mcp_url, {"question": f"recall {index}", "cwd": str(wide)})
                assert not is_error, text
    first, second = (r.usage for r in fake.requests)
    assert first is not None and second is not None
    assert first["cache_creation_input_tokens"] >= 4096
    assert second["cache_read_input_tokens"] >= 4096


def cached_tokens(request: RecordedRequest) -> int:
    usage = request.usage or {}
    details = usage.get("prompt_tokens_details") or {}
    return int(usage.get("cache_read_input_tokens") or details.get("cached_tokens") or 0)


async def ask_long_questions(server: LiveServer, workspace: Path, count: int) -> None:
    """Questions long enough to pass a small `history_max_tokens` every few of them."""
    for index in range(count):
        question = f"recall question {index}: " + "why " * 150
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": question, "cwd": str(workspace)})
        assert not is_error, text


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
async def test_a_history_fold_continues_the_conversation_and_reads_it_from_the_cache(
    workspace: Path, tmp_path: Path, protocol: str
) -> None:
    with FakeLLM(cache_rules=protocol, min_cacheable_tokens=256) as fake:  # type: ignore[arg-type]
        fake.responder = scripted
        settings = scripted_settings(fake, tmp_path, protocol=protocol, history_max_tokens=2000)
        with live_server(settings) as server:
            await ask_long_questions(server, workspace, 20)
            figures = await stats(server, workspace)
    bodies = [r.body for r in fake.requests]
    folds = [r for r in fake.requests if is_fold(r.body)]
    assert figures["compactions"] >= 1 and len(folds) == figures["summaries_written"] >= 1, figures
    assert assert_folds_repeat_the_conversation(bodies, kept=2) == len(folds)
    assert_prefix_invariant(bodies, compactions=figures["compactions"])
    for fold in folds:  # everything but its own last turn comes from the cache
        last_turn = len(json.dumps(fold.body["messages"][-1])) // 4
        assert cached_tokens(fold) >= fold.prompt_tokens - 1.5 * last_turn, (cached_tokens(fold), fold.prompt_tokens)
        assert fold.body["tools"] == question_requests(bodies)[0]["tools"]
    frozen = str(question_requests(bodies)[-1].get("system") or question_requests(bodies)[-1]["messages"][0])
    retired = retired_questions(folds[-1])
    assert retired and f"learned from: {retired[-1]}" in frozen  # the fold's changes reached the ledger


@pytest.mark.parametrize(("summary_model", "folds"), [("claude-sonnet-4-5", False), ("claude-haiku-4-5", True)])
async def test_only_the_answering_model_folds_a_separate_summary_model_gets_standalone_calls(
    workspace: Path, tmp_path: Path, summary_model: str, folds: bool
) -> None:
    with FakeLLM(min_cacheable_tokens=256) as fake:
        fake.responder = scripted
        # claude-haiku-4-5 is the answering model too
        settings = scripted_settings(fake, tmp_path, history_max_tokens=1500, summary_model=summary_model)
        with live_server(settings) as server:
            await ask_long_questions(server, workspace, 8)
    summaries = [r for r in fake.requests if is_summary(r)]
    assert summaries and any(is_fold(r.body) for r in summaries) == folds
    assert all(r.body["model"] == summary_model and bool(r.body.get("tools")) == is_fold(r.body) for r in summaries)
