#!/usr/bin/env python3
"""Live Memory's file feed for Google's Gemini CLI: an AfterTool hook that tees reads and edits to `POST /notify`.

Gemini CLI runs it after its file tools, with the call on stdin (JSON: `hook_event_name` "AfterTool",
`tool_name`, `tool_input` = the model's arguments, `cwd`, `session_id`) and waits for it before the next
model request:
  - `read_file` {"file_path"}                      -> {"kind": "read",  "content": <bytes on disk>}
  - `read_many_files` {"include": [...]}           -> a read for each entry that names a file outright
    (globs and directories are not expanded: the watcher and the next read cover them)
  - `write_file` / `replace` {"file_path"}         -> {"kind": "write", "content": <bytes on disk now>}
A call that failed (`tool_response.error`) tells nothing and is skipped.

Everything else is shared with the Claude Code hook (hooks/notify.py): the same secret floor, size cap,
binary sniff, repository boundary and time bounds; content is always read from disk, never from the
payload. Stdlib only, python3 >= 3.8, never imports the server package, prints nothing (Gemini CLI parses
a hook's stdout as its answer), always exits 0 within about a second, even when the service is down.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # why: PYTHONSAFEPATH would hide our modules

import notify

READ_TOOLS = ("read_file",)
WRITE_TOOLS = ("write_file", "replace")
MANY_READS_TOOL = "read_many_files"
GLOB_MARKS = ("*", "?", "[", "{")
# A call naming more files than this is a bulk dump, not a read worth teeing file by file.
MAX_READS_PER_CALL = 8


def named_files(includes: Any, root: str) -> list[str]:
    """Absolute paths of the existing regular files that `read_many_files` entries name outright."""
    entries = includes if isinstance(includes, list) else []
    named = [e for e in entries if isinstance(e, str) and e and not any(mark in e for mark in GLOB_MARKS)]
    return notify.existing_files([notify.absolute(entry, root) for entry in named], MAX_READS_PER_CALL)


def touched_files(payload: dict[str, Any], root: str) -> list[tuple[str, str]]:
    """(kind, absolute path) for each file the tool call read or changed."""
    tool_input = payload.get("tool_input")
    response = payload.get("tool_response")
    if not isinstance(tool_input, dict) or (isinstance(response, dict) and response.get("error")):
        return []
    tool = payload.get("tool_name")
    if tool == MANY_READS_TOOL:
        return [("read", path) for path in named_files(tool_input.get("include"), root)]
    raw = tool_input.get("file_path")
    if not isinstance(raw, str) or not raw:
        return []
    if tool in READ_TOOLS:
        return [("read", notify.absolute(raw, root))]
    if tool in WRITE_TOOLS:
        return [("write", notify.absolute(raw, root))]
    return []


def main() -> None:
    notify.run_tool_hook("AfterTool", touched_files)


if __name__ == "__main__":
    main()
