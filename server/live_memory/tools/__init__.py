"""The read-only exploration tools the answering model calls: Read, Grep, Glob, find_paths,
get_changed_files, git_search, find_symbol — their schemas (TOOL_SCHEMAS) and one dispatcher (Toolbox).

    box = await Toolbox.create(root, limits)   # one per workspace; blocking setup in a thread
    box = await Toolbox.create(root, limits, index_path=path) # find_symbol reads the symbol index kept at `path`
    await box.keep_index()                     # (the owner's background task) build it, keep it current
    await box.run(name, arguments) -> ToolOutcome  # .files_read: FileRead(path, sha256, size) each

Every path goes through one Jail (jail.py); every child process through run_bounded (subproc.py);
every blocking file operation through asyncio.to_thread. `run` never raises for a bad call: unknown
tools, bad arguments, refusals and tool failures all come back as `is_error` outcomes the model can
correct. Only asyncio.CancelledError propagates (after child processes are killed).

Must never: write to the workspace, execute anything but ripgrep and read-only git, expose .git
internals or secret files' contents, or return more than `limits.max_output_bytes`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from live_memory.fs.jail import Jail, show_path
from live_memory.tools.context import FileRead, ToolContext, ToolLimits, ToolOutcome, bound_text, find_ripgrep
from live_memory.tools.find_paths import run_find_paths
from live_memory.tools.git import run_get_changed_files, run_git_search
from live_memory.tools.index_keeper import IndexKeeper
from live_memory.tools.read import run_read
from live_memory.tools.schemas import TOOL_SCHEMAS
from live_memory.tools.search import run_glob, run_grep
from live_memory.tools.symbols import files_mentioning, run_find_symbol

__all__ = ["TOOL_NAMES", "TOOL_SCHEMAS", "FileRead", "Jail", "ToolLimits", "ToolOutcome", "Toolbox"]

logger = logging.getLogger(__name__)

TOOL_NAMES: frozenset[str] = frozenset(schema["name"] for schema in TOOL_SCHEMAS)

_Handler = Callable[[ToolContext, Mapping[str, Any]], Awaitable[ToolOutcome]]
_HANDLERS: dict[str, _Handler] = {
    "Read": run_read,
    "Grep": run_grep,
    "Glob": run_glob,
    "find_paths": run_find_paths,
    "get_changed_files": run_get_changed_files,
    "git_search": run_git_search,
    "find_symbol": run_find_symbol,
}
assert set(_HANDLERS) == TOOL_NAMES, "every schema needs a handler and vice versa"

_LOWER = {name.lower(): name for name in _HANDLERS}


class Toolbox:
    """The tools bound to one workspace root (absolute; resolved here if it is not already).

    Build one per workspace with `await Toolbox.create(...)`: the constructor resolves the root and
    looks for ripgrep (stat calls; the discovery is cached process-wide), which must not run on the
    event loop. Calling `Toolbox(...)` directly is fine outside an event loop (tests, scripts).
    """

    def __init__(
        self,
        root: Path,
        limits: ToolLimits = ToolLimits(),  # noqa: B008 - frozen
        *,
        index_path: Path | None = None,  # where the checkout's symbol index is kept (None: none)
    ) -> None:
        self.limits = limits
        self.jail = Jail(root, limits.secret_globs)
        context = ToolContext(
            jail=self.jail,
            limits=limits,
            ripgrep=find_ripgrep(limits),
            in_git=(self.jail.root / ".git").exists(),
        )
        # The index is ripgrep's listing, recorded: without ripgrep there is neither.
        self.index = IndexKeeper(context, index_path) if index_path is not None and context.ripgrep else None
        self.context = replace(context, index=self.index)

    @classmethod
    async def create(
        cls,
        root: Path,
        limits: ToolLimits = ToolLimits(),  # noqa: B008 - frozen
        *,
        index_path: Path | None = None,
    ) -> Toolbox:
        """Build a toolbox off the event loop."""
        return await asyncio.to_thread(lambda: cls(root, limits, index_path=index_path))

    @property
    def root(self) -> Path:
        return self.jail.root

    @property
    def ripgrep(self) -> str | None:
        """The ripgrep binary in use, or None when the pure-Python search is used."""
        return self.context.ripgrep

    async def keep_index(self, start_after: asyncio.Event | None = None) -> None:
        """Build or refresh the symbol index (once `start_after` is set, or a while), then keep it current until
        cancelled (the owner's background task; returns at once without an index)."""
        if self.index is not None:
            await self.index.run(start_after)

    def files_changed(self, paths: Iterable[str]) -> None:
        """Workspace-relative files that changed, appeared or went (the index re-reads them)."""
        if self.index is not None:
            self.index.changed(paths)

    def index_status(self) -> dict[str, Any] | None:
        """The symbol index's state for /stats; None without one."""
        return self.index.status() if self.index is not None else None

    async def files_mentioning(self, names: list[str], max_files: int) -> tuple[str, ...] | None:
        """Every file that mentions one of `names` as a word, or None when the search cannot tell them all (not
        a tool the model calls: what a shared answer about a name's uses must rest on)."""
        return await files_mentioning(self.context, names, max_files)

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run one tool call. Never raises except asyncio.CancelledError."""
        handler = _HANDLERS.get(name) or _HANDLERS.get(_LOWER.get(str(name).lower(), ""))
        if handler is None:
            available = ", ".join(schema["name"] for schema in TOOL_SCHEMAS)
            shown = show_path(str(name), 80)
            return ToolOutcome(f"Unknown tool '{shown}'. Available tools: {available}.", is_error=True)
        if arguments is None:
            arguments = {}
        try:
            outcome = await handler(self.context, arguments)
        except Exception as exc:  # a bug or an OS surprise must not kill the question
            logger.exception("tool %s failed on %s", name, self.root)
            return ToolOutcome(f"{name} failed unexpectedly ({type(exc).__name__}); try a different query.", True)
        if len(outcome.text) > self.limits.max_output_bytes // 4:  # cheap pre-check; bound_text is exact
            bounded = bound_text(outcome.text, self.limits.max_output_bytes, "narrow the query")
            if bounded != outcome.text:
                return ToolOutcome(bounded, outcome.is_error, outcome.files_read)
        return outcome
