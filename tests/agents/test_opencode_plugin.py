"""OpenCode's plugin alone: the installed plugin's `tool.execute.after` hook, run under Node (OpenCode runs it
under Bun; the plugin uses only what both provide) one tool call at a time, against the real service. The
real `opencode run` is in test_opencode.py."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli.agents import opencode
from live_memory.constants import PASSIVE_MAX_FILE_BYTES
from tests.plugin.conftest import Service

# Runs installed plugins' hooks under Node (OpenCode runs them under Bun; the plugin uses only what both provide),
# one tool call per line of stdin: {"plugin", "directory", "call", "env"}; answers each with a line saying how
# long the hook took. One Node process serves the module: its first `fetch` loads for a tenth of a second.
DRIVER = """
import { createInterface } from "node:readline"
import { pathToFileURL } from "node:url"
const base = { ...process.env }
for await (const line of createInterface({ input: process.stdin })) {
  const { plugin, directory, call, env } = JSON.parse(line)
  for (const name of Object.keys(process.env)) if (!(name in base)) delete process.env[name]
  Object.assign(process.env, base, env)
  const { LiveMemoryFeed } = await import(pathToFileURL(plugin).href)
  const hooks = await LiveMemoryFeed({ directory })
  const started = Date.now()
  await hooks["tool.execute.after"](call, { title: "", output: "", metadata: {} })
  console.log(JSON.stringify({ ms: Date.now() - started }))
}
"""
ANSWER_TIMEOUT_S = 30.0


@dataclass
class Node:
    """The driver's Node process."""

    process: subprocess.Popen[str]

    def run(self, request: dict[str, Any]) -> int:
        """One hook call; returns the hook's milliseconds."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_TIMEOUT_S)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.process.kill()
            _, stderr = self.process.communicate()
            pytest.fail(f"the plugin's driver gave no answer within {ANSWER_TIMEOUT_S} s: {stderr[-3000:]}")
        ms: int = json.loads(line)["ms"]
        return ms


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    path = shutil.which("node")
    if path is None:
        pytest.skip("Node.js not installed; the plugin's own checks are skipped")
    driver = tmp_path_factory.mktemp("driver") / "driver.mjs"
    driver.write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVE_MEMORY_")}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen([path, str(driver)], env=env, text=True, **pipes) as process:  # type: ignore[call-overload]
        yield Node(process)
        process.stdin.close()
        process.wait(timeout=ANSWER_TIMEOUT_S)


@dataclass
class Feed:
    """The installed plugin, run one tool call at a time."""

    node: Node
    plugin: Path
    repo: Path

    def after(self, tool: str, args: dict[str, Any], **env: str) -> int:
        """Run the plugin's tool.execute.after for one call (`env` set for it); returns the hook's milliseconds."""
        call = {"tool": tool, "sessionID": "ses_test", "callID": "call_1", "args": args}
        return self.node.run({"plugin": str(self.plugin), "directory": str(self.repo), "call": call, "env": env})


@pytest.fixture
def feed(node: Node, service: Service, repo: Path, tmp_path: Path) -> Feed:
    service.load(repo)
    opencode.install(tmp_path / "cfg", service.url, "MY_TOKEN", instructions_dir=None, plugin=True)
    plugin = tmp_path / "feed.mjs"  # .mjs: Node loads it as the ES module OpenCode sees
    plugin.write_bytes((tmp_path / "cfg" / "plugins" / "live-memory.js").read_bytes())
    return Feed(node, plugin, repo)


def teed(service: Service) -> list[dict[str, Any]]:
    return [e for c in service.notifies() for e in c.json()["events"]]


@pytest.mark.parametrize("name", [".env", "deploy.PEM", "id_ed25519", "prod.tfstate"])
def test_the_plugin_announces_credential_files_by_path_only(feed: Feed, service: Service, name: str) -> None:
    secret = feed.repo / name
    secret.write_text("TOKEN=hunter2\n", encoding="utf-8")
    feed.after("read", {"filePath": str(secret)})
    assert teed(service) == [{"path": str(secret), "kind": "read"}]


def test_the_plugin_sends_content_up_to_the_cap_and_no_further(feed: Feed, service: Service) -> None:
    at_cap, over, binary = feed.repo / "at_cap.txt", feed.repo / "over.txt", feed.repo / "blob.bin"
    at_cap.write_text("a" * PASSIVE_MAX_FILE_BYTES, encoding="utf-8")
    over.write_text("a" * (PASSIVE_MAX_FILE_BYTES + 1), encoding="utf-8")
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    for path in (at_cap, over, binary):
        feed.after("read", {"filePath": str(path)})
    events = teed(service)
    assert [(e["path"], "content" in e) for e in events] == [
        (str(at_cap), True),
        (str(over), False),
        (str(binary), False),
    ]
    assert len(events[0]["content"]) == PASSIVE_MAX_FILE_BYTES


def test_the_plugin_never_sends_files_outside_the_repository_or_other_tools(
    feed: Feed, service: Service, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n", encoding="utf-8")
    feed.after("read", {"filePath": str(outside)})
    feed.after("bash", {"command": "cat src/app.py"})
    feed.after("read", {"filePath": str(feed.repo / "missing.py")})
    assert service.notifies() == []


def test_the_plugin_resolves_relative_paths_and_tees_what_apply_patch_touched(feed: Feed, service: Service) -> None:
    (feed.repo / "src" / "new.py").write_text("NEW = 1\n", encoding="utf-8")
    patch = "*** Begin Patch\n*** Add File: src/new.py\n+NEW = 1\n*** Delete File: src/gone.py\n*** End Patch"
    feed.after("apply_patch", {"patchText": patch})
    feed.after("write", {"filePath": "src/app.py", "content": "ignored: the plugin reads the disk"})
    assert teed(service) == [
        {"path": str(feed.repo / "src" / "new.py"), "kind": "write", "content": "NEW = 1\n"},
        {"path": str(feed.repo / "src" / "gone.py"), "kind": "unlink"},
        {
            "path": str(feed.repo / "src" / "app.py"),
            "kind": "write",
            "content": "def answer() -> int:\n    return 42\n",
        },
    ]
    (call, *_) = service.notifies()
    assert call.json()["session_id"] == "ses_test" and "authorization" not in call.headers


def test_the_plugin_sends_the_token_from_the_variable_install_named(feed: Feed, service: Service) -> None:
    feed.after("read", {"filePath": str(feed.repo / "README.md")}, MY_TOKEN="tok-123")
    (call,) = service.notifies()
    assert call.headers["authorization"] == "Bearer tok-123"


def test_the_plugin_is_silent_and_quick_when_the_service_is_down(feed: Feed, service: Service) -> None:
    ms = feed.after("read", {"filePath": str(feed.repo / "README.md")}, LIVE_MEMORY_URL="http://127.0.0.1:9")
    assert ms < 1000 and service.notifies() == []
