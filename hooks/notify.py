#!/usr/bin/env python3
"""Live Memory's file feed: Claude Code hooks tee what the agent reads and edits to `POST /notify`.

One script for every feed hook; it dispatches on the payload's `hook_event_name`:
  - PostToolUse Read                               -> {"kind": "read",  "content": <current bytes on disk>}
  - PostToolUse Write|Edit|NotebookEdit            -> {"kind": "write", "content": <current bytes on disk>}
  - FileChanged change|add|unlink                  -> {"kind": <event>} (no content; ignored paths dropped)
  - SessionStart                                   -> prints watchPaths=[project dir] (so FileChanged fires
                                                      for the whole tree) and one line of context: Live
                                                      Memory is available, or (server down) it is not, so
                                                      the agent uses its normal tools this session.

Every tee runs synchronously (Claude Code waits for it before the next model request), so a question
asked right after an edit sees the new text; the deadline below bounds what that wait can cost.

Contract with Claude Code: stdlib only, python3 >= 3.8, never imports the server package, always exits 0,
prints nothing except the SessionStart JSON, and finishes within ~1 s even when the server is down or hangs.
Content is read from disk (never from the hook payload) and capped per file; a file over the cap, a
binary file, a credential file or an unreadable one is announced by path only, which the server treats as
a change. Files outside the project's repository are not sent at all.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # why: PYTHONSAFEPATH would hide _client

import _client

# The hook returns at the latest after this long, whatever the server does.
HOOK_DEADLINE_S = 1.0
# Why 0.5 s: the tees are synchronous (Claude Code waits for them on every Read and edit); a healthy local
# service answers /notify in tens of milliseconds, and a missed tee is repaired by FileChanged or a re-read.
TEE_TIMEOUT_S = 0.5
HEALTH_TIMEOUT_S = 0.5
BINARY_SNIFF_BYTES = 8192
MAX_SESSION_ID_CHARS = 256
GIT_CHECK_IGNORE_TIMEOUT_S = 0.3
TOOL_NAME = "mcp__plugin_live-memory_live-memory__ask_live_memory"
READ_TOOLS = ("Read",)
# The file-writing tools of Claude Code (there is no MultiEdit tool; a test checks these against the CLI).
WRITE_TOOLS = ("Write", "Edit", "NotebookEdit")
FILE_EVENTS = ("change", "add", "unlink")
# Directories whose churn never teaches the memory anything (VCS internals, dependencies, caches, envs).
IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".jj",
        "node_modules",
        "bower_components",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".idea",
        ".next",
        ".nuxt",
        ".turbo",
        ".parcel-cache",
        ".gradle",
        ".terraform",
    }
)
IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".swo", ".swx", "~", ".tmp", ".DS_Store")
IGNORED_NAMES = frozenset({"4913", ".DS_Store"})  # 4913: the probe file vim writes before saving
# Credentials never leave this process: such a file is announced by path only (the server has its own,
# configurable guard; this is the floor). Matched case-insensitively against the file name.
SECRET_NAMES = (
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
    "*.tfstate",
    "*.tfstate.backup",
)
# Files copied to the plugin's data dir so the status line has a path that survives plugin updates.
STATUSLINE_FILES = ("statusline.py", "_client.py")


def context_line(root: str) -> str:
    """The one line of SessionStart context (kept well under 60 tokens)."""
    return (
        "Live Memory (a persistent memory of this repo) is available: before exploring unfamiliar code or "
        f're-reading files, ask {TOOL_NAME} with cwd="{root}".'
    )


def unavailable_line(why: str = "its service is not running") -> str:
    """The context line when the service does not answer (or cannot answer questions): the skill would
    otherwise keep telling the model to ask a tool that fails (Claude Code connects once, at session start)."""
    return f"Live Memory is unavailable this session ({why}): do not call {TOOL_NAME}; explore with your normal tools."


def workspace_root(project: str) -> str:
    """The repository around the project dir (nearest ancestor holding .git), else the project dir.

    Why: the server's workspace is that repository; a file outside it would only be refused there,
    so it is never sent (the agent may read anything, e.g. files in your home directory).
    """
    current = project
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return project
        current = parent


def is_inside(path: str, root: str) -> bool:
    """Lexically inside, or inside once symlinks are resolved (e.g. /tmp -> /private/tmp)."""
    for candidate, base in ((path, root), (os.path.realpath(path), os.path.realpath(root))):
        if candidate == base or candidate.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def is_secret(path: str) -> bool:
    name = os.path.basename(path).lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_NAMES)


def read_for_tee(path: str) -> dict[str, Any] | None:
    """{"content": str|None} for an existing regular file, None when there is nothing to tee.

    Why the stat first: never open a FIFO or device (that could block), never read past the cap.
    """
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size > _client.MAX_FILE_BYTES or is_secret(path):
        return {"content": None}
    try:
        with open(path, "rb") as handle:
            data = handle.read(_client.MAX_FILE_BYTES + 1)
    except OSError:
        return {"content": None}
    if len(data) > _client.MAX_FILE_BYTES or b"\0" in data[:BINARY_SNIFF_BYTES]:
        return {"content": None}
    return {"content": data.decode("utf-8", errors="replace")}


def is_ignored(path: str, root: str) -> bool:
    """True for paths whose changes the memory should never hear about (checked before any network call)."""
    parts = [p for p in os.path.normpath(path).split(os.sep) if p]
    if not parts:
        return True
    name = parts[-1]
    if name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES) or name.startswith(".#"):
        return True
    if any(part in IGNORED_DIRS for part in parts[:-1]):
        return True
    return git_ignores(path, root)


def git_ignores(path: str, root: str) -> bool:
    """Ask git whether the repository ignores `path` (False when git or the repository is missing)."""
    git = shutil.which("git")
    if git is None or not os.path.isdir(root):
        return False
    try:
        done = subprocess.run(
            [git, "-C", root, "check-ignore", "-q", "--", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=GIT_CHECK_IGNORE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def tool_file_path(payload: dict[str, Any]) -> str:
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return ""
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def absolute(path: str, root: str) -> str:
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))


def existing_files(paths: list[str], cap: int) -> list[str]:
    """The regular files among absolute `paths`, each once; none when more than `cap` (a call that names that
    many files is no plain read)."""
    found: list[str] = []
    for path in paths:
        if os.path.isfile(path) and path not in found:
            found.append(path)
    return found if len(found) <= cap else []


def post_events(payload: dict[str, Any], root: str, events: list[dict[str, Any]]) -> None:
    body: dict[str, Any] = {"cwd": root, "events": events}
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        body["session_id"] = session_id[:MAX_SESSION_ID_CHARS]
    _client.request("POST", "/notify", body, timeout=TEE_TIMEOUT_S)


def on_tool_use(payload: dict[str, Any], root: str) -> None:
    tool = payload.get("tool_name")
    if tool in READ_TOOLS:
        kind = "read"
    elif tool in WRITE_TOOLS:
        kind = "write"
    else:
        return
    raw = tool_file_path(payload)
    if raw:
        tee(payload, root, [(kind, absolute(raw, root))])


def file_event(path: str, kind: str) -> dict[str, Any] | None:
    """The /notify event for one file (content from disk), None when there is nothing to say."""
    if kind == "unlink":
        return {"path": path, "kind": "unlink"}
    found = read_for_tee(path)
    if found is None:
        return None
    event: dict[str, Any] = {"path": path, "kind": kind}
    if found["content"] is not None:
        event["content"] = found["content"]
    return event


def tee(payload: dict[str, Any], root: str, touched: list[tuple[str, str]]) -> None:
    """One /notify for the (kind, absolute path) pairs inside the repository; nothing when none is left."""
    boundary = workspace_root(root)
    events = []
    for kind, path in touched:
        if is_inside(path, boundary):
            event = file_event(path, kind)
            if event is not None:
                events.append(event)
    if events:
        post_events(payload, root, events)


def run_tool_hook(event: str, touched_files: Callable[[dict[str, Any], str], list[tuple[str, str]]]) -> None:
    """Another agent's after-tool hook: the payload on stdin names `event`; `touched_files` says which files the
    tool read or wrote (kind, absolute path); they are teed like Claude Code's, within the hook's deadline."""

    def handle(payload: dict[str, Any] | None) -> None:
        if payload is None or payload.get("hook_event_name") != event:
            return
        root = _client.project_dir(payload)
        tee(payload, root, touched_files(payload, root))

    _client.run_bounded(lambda: handle(_client.read_payload()), HOOK_DEADLINE_S)


def on_file_changed(payload: dict[str, Any], root: str) -> None:
    raw = payload.get("file_path")
    kind = payload.get("event")
    if not isinstance(raw, str) or not raw or kind not in FILE_EVENTS:
        return
    path = absolute(raw, root)
    if is_ignored(path, root):
        return
    post_events(payload, root, [{"path": path, "kind": kind}])


def write_if_changed(path: str, wanted: bytes) -> None:
    try:
        with open(path, "rb") as handle:
            if handle.read() == wanted:
                return
    except OSError:
        pass
    partial = path + ".tmp"
    with open(partial, "wb") as handle:
        handle.write(wanted)
    os.replace(partial, path)


def install_statusline(env: dict[str, str] | None = None) -> None:
    """Copy the status-line script to ${CLAUDE_PLUGIN_DATA}, a path that survives plugin updates.

    Why: ${CLAUDE_PLUGIN_ROOT} changes with every update, and a user's statusLine setting cannot name
    it. The server_url option goes beside it (never the token), since a status line gets no plugin options.
    """
    env = dict(os.environ) if env is None else env
    data_dir = env.get("CLAUDE_PLUGIN_DATA", "")
    if not data_dir or not os.path.isabs(data_dir):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        os.makedirs(data_dir, exist_ok=True)
        for name in STATUSLINE_FILES:
            with open(os.path.join(here, name), "rb") as handle:
                write_if_changed(os.path.join(data_dir, name), handle.read())
        options = {"server_url": env.get("CLAUDE_PLUGIN_OPTION_SERVER_URL", "")}
        write_if_changed(os.path.join(data_dir, "client.json"), json.dumps(options).encode("utf-8"))
    except OSError:
        pass


def on_session_start(payload: dict[str, Any], root: str) -> str:
    install_statusline()
    output: dict[str, Any] = {"hookEventName": "SessionStart", "watchPaths": [root]}
    status, health = _client.request("GET", "/health", timeout=HEALTH_TIMEOUT_S)
    if status == 200 and health is not None and health.get("status") == "ok":
        output["additionalContext"] = context_line(root)
    elif status == 200 and health is not None and health.get("credential") == "missing":
        output["additionalContext"] = unavailable_line("its service has no model credential")
    else:
        output["additionalContext"] = unavailable_line()
    return json.dumps({"hookSpecificOutput": output})


def handle(payload: dict[str, Any] | None) -> str | None:
    if payload is None:
        return None
    root = _client.project_dir(payload)
    event = payload.get("hook_event_name")
    if event == "PostToolUse":
        on_tool_use(payload, root)
    elif event == "FileChanged":
        on_file_changed(payload, root)
    elif event == "SessionStart":
        return on_session_start(payload, root)
    return None


def main() -> None:
    # Why read stdin inside the bound: a writer that never closes the pipe must not hold Claude up.
    _client.run_bounded(lambda: handle(_client.read_payload()), HOOK_DEADLINE_S)


if __name__ == "__main__":
    main()
