"""The files every agent's installer touches the same way, whatever the agent.

Owns: the service URL an agent is pointed at, reading a config as UTF-8 text, writing one atomically with
its mode kept, the copy of the hook scripts under the agent's home (a path that outlives the checkout
they came from), and a marked note in a repository's instructions file (AGENTS.md, GEMINI.md). Never
decides what goes into an agent's own configuration: that is each agent's module.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import live_memory
from live_memory.errors import ConfigError
from live_memory.safe_files import atomic_write

# Where the scripts are in a checkout; a wheel has no hooks/, and then the hook is skipped (the OS watcher feeds).
CHECKOUT_HOOKS = Path(live_memory.__file__).resolve().parents[2] / "hooks"
HOOK_DIR_NAME = "live-memory"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NO_HOOK = (
    "hook: not installed (the hook scripts were not found; install from a checkout of Live Memory);"
    " the service's file watcher still sees every edit"
)

INSTRUCTIONS_NOTE = """\
## Live Memory

This repository has Live Memory, a persistent memory of the codebase, as the `ask_live_memory` tool of the
`live_memory` MCP server. It keeps what it learned from earlier questions and from the files agents read
and edit, so asking it is cheaper than exploring.

- Ask it **before exploring unfamiliar code** ("Where is X implemented and what calls it?"), **instead of
  re-reading files** already read in an earlier session, and **to recall why code is so**.
- Do not ask about a small file you are about to edit anyway (read it), or about what is already in your
  context.
- Pass `question` (one self-contained question with the names, paths or error text you have) and `cwd`:
  the absolute path of this repository's root (the directory holding this file), never a relative path.
- Use the file paths and line ranges of the answer to read only the lines you need. Ignore its final
  `[live-memory]` metadata line. If the tool is unavailable or errors, go on with your normal tools.
"""


def base_url(url: str) -> str:
    """The service's base URL from what the user gave (a trailing ``/`` or ``/mcp`` dropped)."""
    base = url.strip().rstrip("/")
    base = base.removesuffix("/mcp")
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", base):
        raise ConfigError(f"url must be the service's http(s) URL, e.g. http://127.0.0.1:7711, got {url!r}")
    return base


def check_token_env(token_env: str | None) -> None:
    if token_env is not None and not ENV_NAME.fullmatch(token_env):
        raise ConfigError(f"token_env must name an environment variable (letters, digits, _), got {token_env!r}")


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text; fix it and run again") from exc


def write(path: Path, text: str, *, default_mode: int) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = default_mode
    atomic_write(path, text.encode("utf-8"), mode)


def appended(text: str, block: str) -> str:
    """``text`` with ``block`` after it, one blank line between (none when ``text`` is empty)."""
    gap = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    return text + gap + block


def remove_span(text: str, span: tuple[int, int]) -> str:
    start, end = span
    # The blank line install put before the block goes with it.
    if text[:start].endswith("\n\n"):
        start -= 1
    return text[:start] + text[end:]


# ------------------------------------------------------------------------------------------ hook scripts


def hooks_at_hand(source: Path, names: Sequence[str]) -> bool:
    return all((source / name).is_file() for name in names)


def copy_hooks(source: Path, target: Path, names: Sequence[str]) -> list[str]:
    target.mkdir(parents=True, exist_ok=True)
    changed = []
    for name in names:
        data = (source / name).read_bytes()
        destination = target / name
        if not destination.is_file() or destination.read_bytes() != data:
            atomic_write(destination, data, 0o644)
            changed.append(name)
    return [f"{target}: copied {', '.join(changed)}"] if changed else []


def remove_hooks(target: Path, names: Sequence[str]) -> list[str]:
    removed = [name for name in names if (target / name).is_file()]
    for name in removed:
        (target / name).unlink()
    cache = target / "__pycache__"
    if cache.is_dir():
        for leftover in cache.glob("*.pyc"):
            leftover.unlink()
        cache.rmdir()
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    return [f"{target}: removed {', '.join(removed)}"] if removed else []


# ------------------------------------------------------------------------------------- instructions note


@dataclass(frozen=True)
class Note:
    """The marked section an agent's installer keeps in a repository's instructions file."""

    file_name: str  # e.g. "AGENTS.md"
    begin: str
    end: str
    text: str = INSTRUCTIONS_NOTE

    def span(self, text: str, path: Path) -> tuple[int, int] | None:
        start, end = text.find(self.begin), text.find(self.end)
        if start < 0 and end < 0:
            return None
        if start < 0 or end < start or text.count(self.begin) != 1 or text.count(self.end) != 1:
            raise ConfigError(f"{path} has damaged Live Memory markers; remove its Live Memory section by hand")
        end += len(self.end)
        if text[end : end + 1] == "\n":
            end += 1
        return start, end

    def add(self, repository: Path) -> str:
        path = repository / self.file_name
        text = read_text(path)
        note = f"{self.begin}\n{self.text}{self.end}\n"
        span = self.span(text, path)
        new_text = appended(text, note) if span is None else text[: span[0]] + note + text[span[1] :]
        if new_text == text:
            return f"{path}: Live Memory note already up to date"
        write(path, new_text, default_mode=0o644)
        return f"{path}: added a note on when to ask Live Memory"

    def remove(self, repository: Path) -> str:
        path = repository / self.file_name
        text = read_text(path)
        span = self.span(text, path)
        if span is None:
            return f"{path}: no Live Memory note to remove"
        new_text = remove_span(text, span)
        if not new_text.strip():
            path.unlink()
            return f"{path}: removed (it held only the Live Memory note)"
        write(path, new_text, default_mode=0o644)
        return f"{path}: removed the Live Memory note"


def finish_uninstall(
    path: Path,
    new_text: str | None,
    what: str,
    hooks: tuple[Path, tuple[str, ...]],
    note: Note,
    instructions_dir: Path | None,
) -> list[str]:
    """The end every uninstall shares: `path` rewritten as `new_text` (None: nothing of ours was there; empty:
    install created it, so it goes), our hook scripts removed, and on request the note; what changed, in words."""
    if new_text is None:
        lines = [f"{path}: nothing of Live Memory's to remove"]
    elif not new_text:
        path.unlink()  # install created it: leave no empty file behind
        lines = [f"{path}: removed (it held only Live Memory's entries)"]
    else:
        write(path, new_text, default_mode=0o600)
        lines = [f"{path}: removed {what} and Live Memory's hook"]
    lines += remove_hooks(*hooks)
    if instructions_dir is not None:
        lines.append(note.remove(instructions_dir))
    return lines


def prepare_install(
    url: str, token_env: str | None, hooks_source: Path | None, hooks_target: Path, hook_files: Sequence[str]
) -> tuple[str, list[str], bool]:
    """The start every install shares: the service's base URL and the token's variable name checked, the hook
    scripts copied when they are at hand (else a line saying the watcher feeds the memory). Returns the base
    URL, what changed so far, and whether the hook scripts are in place."""
    base = base_url(url)
    check_token_env(token_env)
    if hooks_source is not None and hooks_at_hand(hooks_source, hook_files):
        return base, copy_hooks(hooks_source, hooks_target, hook_files), True
    return base, [NO_HOOK], False


def write_config(path: Path, new_text: str | None, said: list[str], lines: list[str]) -> list[str]:
    """An install's configuration written (`new_text`; None: it already holds our entries, nothing is written),
    `said` first (what the entries do; only when written), then what the install did before."""
    if new_text is None:
        return [f"{path}: already up to date", *lines]
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, new_text, default_mode=0o600)
    return [said[0], *lines, *said[1:]]
