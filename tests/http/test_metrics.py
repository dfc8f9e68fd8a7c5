"""/metrics: answer latency histogram, token counters and provider errors by kind, process metrics, and
workspaces labelled by their id with the path as an info metric."""

from __future__ import annotations

from pathlib import Path

import httpx2

from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply


async def test_metrics_label_workspaces_by_id_and_count_latency_tokens_and_provider_errors(
    fake: FakeLLM, tmp_path: Path
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "a.py").write_text("A = 1\n")
    fake.script(
        Reply.tool_call("Read", {"file_path": "a.py"}),
        Reply.text("A is 1."),
        Reply.error(401, "invalid x-api-key", error_type="authentication_error"),
    )
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        _, first_error = await ask_via_mcp(server.mcp_url, {"question": "what is A?", "cwd": str(workspace)})
        _, second_error = await ask_via_mcp(server.mcp_url, {"question": "again?", "cwd": str(workspace)})
        async with httpx2.AsyncClient(base_url=server.url) as client:
            ws = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
            text = (await client.get("/metrics")).text
    assert not first_error and second_error
    label = f'workspace="{ws["id"]}"'
    assert f'live_memory_workspace_info{{path="{workspace}",{label}}} 1.0' in text
    assert str(workspace) not in text.replace(f'path="{workspace}"', "")  # the path appears only in the info metric
    assert f"live_memory_answer_latency_seconds_count{{{label}}} 1.0" in text
    assert f'live_memory_answer_latency_seconds_bucket{{le="+Inf",{label}}} 1.0' in text
    tokens = ws["tokens"]
    for name in ("input", "cache_read", "cache_write", "output"):
        assert f'live_memory_tokens_total{{kind="foreground",type="{name}",{label}}} {float(tokens[name])}' in text
    assert 'live_memory_provider_errors_total{kind="auth"} 1.0' in text
    assert "process_resident_memory_bytes" in text and "process_open_fds" in text
    assert "live_memory_credential_missing 0.0" in text
