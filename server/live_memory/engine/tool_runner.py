"""The seam between the engine and the read-only tools: what the answer path asks of them (the `tools` package
implements it), so the engine never imports a tool."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol


class FileReadLike(Protocol):
    """A file a tool returned, fingerprinted from the descriptor it was read from."""

    @property
    def path(self) -> str: ...

    @property
    def sha256(self) -> str: ...

    @property
    def size(self) -> int: ...


class ToolOutcomeLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def files_read(self) -> Sequence[FileReadLike]: ...


class ToolRunner(Protocol):
    """The one seam every tool call goes through (the `tools` package implements it)."""

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcomeLike: ...


class CheckoutTools(ToolRunner, Protocol):
    """A checkout's tools as the service holds them: the loop's seam, the search a shared answer about a name's
    uses rests on (team_work.py), and the checkout's symbol index, which the service keeps in its task group and
    tells of changed files."""

    @property
    def root(self) -> Path: ...

    async def keep_index(self, start_after: asyncio.Event | None = None) -> None:
        """Build or refresh the symbol index (once `start_after` is set, or a while), then keep it current until
        cancelled (returns at once without one)."""
        ...

    def files_changed(self, paths: Iterable[str]) -> None:
        """Workspace-relative files that changed, appeared or went."""
        ...

    def index_status(self) -> dict[str, Any] | None:
        """The symbol index's state (None without one)."""
        ...

    async def files_mentioning(self, names: list[str], max_files: int) -> tuple[str, ...] | None:
        """Every file of the checkout that mentions one of `names` as a word; None when not all can be told."""
        ...
