"""The one note on when to ask Live Memory that a repository's instructions file (AGENTS.md, GEMINI.md) holds,
whichever agents read it.

Codex and OpenCode both read AGENTS.md: installing both must not leave two notes that disagree, so there is one
note, in one marked section whose first line names the agents it was installed for. Installing another agent
adds its name there; uninstalling one takes its name out, and the last one's uninstall removes the section and
the blank line before it, giving the file back byte for byte (a file that held only the note is deleted).
Sections an older version wrote, one per agent with its own markers, are read as the same note: the next
install or uninstall folds them into one, or removes them.

Plans the text only: writing it is the installer's (all of an install's files at once, or none).
"""

from __future__ import annotations

import re
from pathlib import Path

from live_memory.core.errors import ConfigError

BEGIN = (
    "<!-- live-memory:begin for {agents} (live-memory install adds an agent, uninstall of the last removes this) -->"
)
END = "<!-- live-memory:end -->"
_BEGIN = re.compile(r"^<!-- live-memory:begin for ([a-z0-9 -]+) \(.*-->$", re.M)
# Sections written before the note was shared: (begin line, end line, the agent they were written for).
LEGACY = (
    (
        "<!-- live-memory:begin (written by live-memory; its uninstall removes this block) -->",
        "<!-- live-memory:end -->",
        "opencode",
    ),
    ("<!-- added by live-memory install codex -->", "<!-- end of live-memory install codex -->", "codex"),
    ("<!-- added by live-memory install gemini -->", "<!-- end of live-memory install gemini -->", "gemini"),
)

TEXT = """\
## Live Memory

This repository has Live Memory, a persistent memory of the codebase that every coding agent working on it
shares: the `ask_live_memory` tool of the `live_memory` MCP server (OpenCode lists it as
`live_memory_ask_live_memory`, Gemini CLI as `mcp_live_memory_ask_live_memory`). It keeps what it learned
from earlier questions and from the files agents read and edit, so asking it is cheaper than exploring.

- Ask it **before exploring unfamiliar code** ("Where is X implemented and what calls it?"), **instead of
  re-reading files** already read in an earlier session, and **to recall why code is so**.
- Do not ask about a small file you are about to edit anyway (read it), or about what is already in your
  context.
- Pass `question` (one self-contained question with the names, paths or error text you have) and `cwd`:
  the absolute path of this repository's root (the directory holding this file), never a relative path.
- Use the file paths and line ranges of the answer to read only the lines you need. Ignore its final
  `[live-memory]` metadata line. If the tool is unavailable or errors, go on with your normal tools; do not
  retry in a loop.
"""


def section(agents: set[str]) -> str:
    return f"{BEGIN.format(agents=' '.join(sorted(agents)))}\n{TEXT}{END}\n"


def _sections(text: str, path: Path) -> list[tuple[int, int, set[str]]]:
    """Every Live Memory section in `text`, in order: (start, end past its end line's newline, its agents)."""
    starts = [(m.start(), m.end(), END, set(m.group(1).split())) for m in _BEGIN.finditer(text)]
    for begin, legacy_end, agent in LEGACY:
        at = text.find(begin)
        while at >= 0:
            starts.append((at, at + len(begin), legacy_end, {agent}))
            at = text.find(begin, at + 1)
    found: list[tuple[int, int, set[str]]] = []
    for start, body, end_marker, agents in sorted(starts, key=lambda s: s[0]):
        stop = text.find(end_marker, body)
        if stop < 0 or (found and start < found[-1][1]):
            raise ConfigError(f"{path} has damaged Live Memory markers; remove its Live Memory section by hand")
        end = stop + len(end_marker)
        found.append((start, end + 1 if text[end : end + 1] == "\n" else end, agents))
    return found


def _without(text: str, start: int, end: int) -> str:
    # The blank line install put before the section goes with it.
    if text[:start].endswith("\n\n"):
        start -= 1
    return text[:start] + text[end:]


def _rewritten(text: str, found: list[tuple[int, int, set[str]]], agents: set[str]) -> str:
    """`text` with the sections `found` folded into one for `agents` where the first was (none: all removed)."""
    keep = found[:1] if agents else []
    for start, end, _ in reversed(found[len(keep) :]):
        text = _without(text, start, end)
    if keep:
        start, end, _ = keep[0]
        text = text[:start] + section(agents) + text[end:]
    return text


def with_agent(text: str, agent: str, path: Path) -> str:
    """`text` holding the one note, for `agent` and the agents it already named."""
    found = _sections(text, path)
    if not found:
        gap = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return text + gap + section({agent})
    return _rewritten(text, found, {agent}.union(*(a for _, _, a in found)))


def without_agent(text: str, agent: str, path: Path) -> str:
    """`text` with `agent` taken out of the note; without the note when no agent is left."""
    found = _sections(text, path)
    return _rewritten(text, found, set().union(*(a for _, _, a in found)) - {agent})


def agents_in(text: str, path: Path) -> set[str]:
    """The agents the note in `text` names (none without a note)."""
    return set().union(*(a for _, _, a in _sections(text, path)))
