"""The scripted model: a real loopback server answering the Messages API with the simulator's usage."""

from __future__ import annotations

import http.client
import json
from typing import Any

from live_memory.testing.prompt_cache import PromptCache
from live_memory.testing.scripted_model import ScriptedModel

TIMEOUT_S = 10.0


def reply(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    return [{"type": "text", "text": f"{len(body['messages'])} messages"}], "end_turn"


def post(model: ScriptedModel, path: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    host, port = model.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)
    try:
        connection.request("POST", path, json.dumps(payload), {"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_the_unchanged_prefix_up_to_a_breakpoint_is_read_from_the_cache() -> None:
    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]
    first = {"model": "claude-haiku-4-5", "system": system, "messages": [{"role": "user", "content": "one " * 20}]}
    second = {**first, "messages": [{"role": "user", "content": "two " * 20}]}
    changed = {**second, "system": [{**system[0], "text": "t" * 400}]}
    with ScriptedModel(reply, cache=PromptCache("anthropic", min_cacheable_tokens=0)) as model:
        status, cold = post(model, "/v1/messages", first)
        assert status == 200 and cold["content"] == [{"type": "text", "text": "1 messages"}]
        assert cold["usage"]["cache_read_input_tokens"] == 0 and cold["usage"]["cache_creation_input_tokens"] == 100
        warm = post(model, "/v1/messages", second)[1]["usage"]
        assert warm["cache_read_input_tokens"] == 100
        assert warm["input_tokens"] > 0  # the new question itself is not cached
        assert post(model, "/v1/messages", changed)[1]["usage"]["cache_read_input_tokens"] == 0
        assert model.requests == [first, second, changed]


def test_the_models_minimum_applies_unless_the_cache_is_told_otherwise() -> None:
    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]
    request = {"model": "claude-haiku-4-5", "system": system, "messages": [{"role": "user", "content": "q"}]}
    with ScriptedModel(reply) as model:
        for _ in range(2):
            usage = post(model, "/v1/messages", request)[1]["usage"]
            assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_anything_but_the_messages_route_is_a_json_404() -> None:
    with ScriptedModel(reply) as model:
        status, payload = post(model, "/v1/chat/completions", {"messages": []})
    assert status == 404 and payload["type"] == "error"
    assert model.requests == []
