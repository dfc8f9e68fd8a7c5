"""An in-process HTTP endpoint for the provider SDKs (served through `httpx2.MockTransport`): it records
each request and answers with a function of it, so wire tests need no server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2


class Wire:
    def __init__(self, respond: Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.respond = respond
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.respond(request)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def body(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)


def all_text(value: Any) -> str:
    """Every string inside a request body, joined: what the model could read."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(all_text(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(all_text(v) for v in value)
    return ""
