"""An in-process HTTP endpoint for the provider SDKs (served through `httpx2.MockTransport`): it records
each request and answers with a function of it, so wire tests need no server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2 as httpx


class Wire:
    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))

    def body(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)
