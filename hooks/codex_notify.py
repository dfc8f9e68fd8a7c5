#!/usr/bin/env python3
"""Live Memory's file feed for OpenAI's Codex CLI: a PostToolUse hook that tees reads and edits to `POST /notify`.

Codex has no file-reading tool: its agent reads with shell commands, and edits with `apply_patch`. Its
PostToolUse payload (stdin, JSON) carries the tool's input, so:
  - tool_name "apply_patch", tool_input.command = the patch -> each `*** Add File:` / `*** Update File:` /
    `*** Move to:` path is a {"kind": "write", "content": <bytes on disk now>}; `*** Delete File:` and the
    source of a move are {"kind": "unlink"};
  - tool_name "Bash", tool_input.command = the command line -> the files that a plain reading command
    (`cat`, `sed -n`, `head`, `tail`, `nl`, ...) names are {"kind": "read", "content": <bytes on disk>}.
    Only commands split by `&&`, `||`, `;` and `|` are followed (and a leading `cd DIR`); anything the
    shell would expand (globs, variables, substitutions) is not guessed at: the service's watcher and
    the next read cover what this misses.

Everything else is shared with the Claude Code hook (hooks/notify.py): the same secret floor, size cap,
binary sniff, repository boundary and time bounds; content is always read from disk, never from the
payload. Stdlib only, python3 >= 3.8, never imports the server package, prints nothing, always exits 0
within about a second, even when the service is down or hangs.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # why: PYTHONSAFEPATH would hide our modules

import notify

# Commands whose file arguments are read in full or in part (their other arguments are options or scripts,
# which are told apart from files by looking at the disk).
READ_COMMANDS = frozenset({"cat", "sed", "head", "tail", "nl", "less", "more", "bat", "batcat", "view", "tac"})
SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
# A command naming more files than this is a bulk dump (e.g. `cat src/*.py` expanded by hand): not a read
# worth teeing file by file.
MAX_READS_PER_COMMAND = 8
PATCH_WRITES = ("*** Add File: ", "*** Update File: ", "*** Move to: ")
PATCH_DELETE = "*** Delete File: "


def patch_events(patch: str) -> list[tuple[str, str]]:
    """(kind, path as written) for each file an apply_patch body touches, in order."""
    found: list[tuple[str, str]] = []
    for line in patch.splitlines():
        for prefix in PATCH_WRITES:
            if line.startswith(prefix):
                if prefix == "*** Move to: " and found and found[-1][0] == "write":
                    found[-1] = ("unlink", found[-1][1])  # the source of a move is gone
                found.append(("write", line[len(prefix) :].strip()))
        if line.startswith(PATCH_DELETE):
            found.append(("unlink", line[len(PATCH_DELETE) :].strip()))
    return found


def simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command of a command line; [] when the shell would transform it."""
    if any(marker in command for marker in ("$", "`", "*", "?", "[", "<", ">", "\n")):
        return []
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes
        return []
    commands: list[list[str]] = [[]]
    for word in words:
        if word in SHELL_OPERATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def read_paths(command: str, cwd: str) -> list[str]:
    """Absolute paths of the existing regular files that reading commands in `command` name."""
    base, paths = cwd, []
    for words in simple_commands(command):
        program = os.path.basename(words[0])
        if program == "cd" and len(words) == 2:
            base = notify.absolute(words[1], base)
        elif program in READ_COMMANDS:
            paths += [notify.absolute(word, base) for word in words[1:] if not word.startswith("-")]
    return notify.existing_files(paths, MAX_READS_PER_COMMAND)


def touched_files(payload: dict[str, Any], root: str) -> list[tuple[str, str]]:
    """(kind, absolute path) for each file the tool call read or changed."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not command:
        return []
    tool = payload.get("tool_name")
    if tool == "apply_patch":
        return [(kind, notify.absolute(path, root)) for kind, path in patch_events(command) if path]
    if tool == "Bash":
        return [("read", path) for path in read_paths(command, root)]
    return []


def main() -> None:
    notify.run_tool_hook("PostToolUse", touched_files)


if __name__ == "__main__":
    main()
