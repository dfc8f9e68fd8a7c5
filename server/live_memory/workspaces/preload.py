"""Preload: configured reference documents read verbatim into a workspace on every load.

Patterns are expanded relative to the workspace root and path-jailed like the tools (absolute
or escaping patterns are refused, symlink escapes and secrets skipped, binary files skipped).
Which files make the cut is deterministic: earlier patterns win, paths sort within a pattern, and
the total is capped (the caller clamps the cap to the compaction floor so preloaded documents are
never distilled away by the first question). The bytes are never persisted.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import Jail

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PreloadedDoc:
    path: str
    content: str
    sha256: str


def _expand(root: Path, pattern: str) -> list[Path]:
    cleaned = pattern.strip().replace("\\", "/")
    if not cleaned or cleaned.startswith("/") or ".." in cleaned.split("/"):
        logger.warning("preload pattern %r refused: patterns are relative to the workspace, without '..'", pattern)
        return []
    try:
        return sorted(p for p in root.glob(cleaned) if p.is_file())
    except (ValueError, OSError) as exc:
        logger.warning("preload pattern %r is invalid: %s", pattern, exc)
        return []


def read_preload(
    root: Path, patterns: Sequence[str], *, max_file_bytes: int, max_total_bytes: int, secret_globs: Sequence[str]
) -> list[PreloadedDoc]:
    """Blocking: expand, jail, read. Use `load_preload` from async code."""
    jail = Jail(root, secret_globs)
    docs: list[PreloadedDoc] = []
    seen: set[str] = set()
    seen_real: set[Path] = set()  # a link to a document already loaded is not loaded twice
    total = 0
    clamped: list[str] = []
    for pattern in patterns:
        for candidate in _expand(root, pattern):
            try:
                rel = jail.normalize(str(candidate))
                if rel in seen:
                    continue
                real = jail.resolve_relative(rel)
                if real in seen_real:
                    continue
                with jail.open_text(real) as handle:
                    data = handle.read(max_file_bytes + 1)
            except (JailRefusal, OSError) as exc:
                logger.info("preload skipped %s: %s", candidate, exc)
                continue
            if len(data) > max_file_bytes:
                logger.info("preload skipped %s: larger than passive_max_file_bytes (%d)", rel, max_file_bytes)
                continue
            if total + len(data) > max_total_bytes:
                clamped.append(rel)
                continue
            seen.add(rel)
            seen_real.add(real)
            total += len(data)
            docs.append(PreloadedDoc(rel, data.decode("utf-8", "replace"), hashlib.sha256(data).hexdigest()))
    if clamped:
        logger.warning(
            "preload clamped at %d bytes (the lower of preload_max_total_bytes and the compaction floor); "
            "not loaded: %s",
            max_total_bytes,
            ", ".join(clamped[:20]) + (f" (+{len(clamped) - 20} more)" if len(clamped) > 20 else ""),
        )
    return docs


async def load_preload(
    root: Path, patterns: Sequence[str], *, max_file_bytes: int, max_total_bytes: int, secret_globs: Sequence[str]
) -> list[PreloadedDoc]:
    return await asyncio.to_thread(
        read_preload,
        root,
        patterns,
        max_file_bytes=max_file_bytes,
        max_total_bytes=max_total_bytes,
        secret_globs=secret_globs,
    )
