"""Building and refreshing a checkout's symbol index (symbol_store.py): the files the workspace scan would search,
each recorded as it is on disk.

    python -m live_memory.tools.index_child ROOT INDEX [--secret-glob GLOB ...]   # what the keeper starts
    refresh(store, jail, listed)            # the same work in the server, when only a few files changed

The file list is ripgrep's own (`rg --files` with Grep's flags, secret files left out), so the index holds what
the scan searches. Before listing, the modification times of the directories ripgrep would enter are recorded
(`directory_stamps`): at the next start, when none moved, no file was added or removed, and a stat of each
recorded file tells what changed (`changed_since`). A build (no index, or one that cannot be trusted) writes a
new file and renames it into place once every file is recorded; a refresh updates a trusted index in place, file
by file (a kill in between leaves stamps that no longer match, so the next refresh reads those files again).

The child process runs at a lower priority (`SYMBOL_INDEX_NICE`), in its own interpreter: parsing tens of
thousands of files must not take the server's CPU or its GIL from the questions being answered. It prints one
JSON line (what it did) and exits 0, or exits 1 with the reason on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from live_memory import constants as C
from live_memory.constants import LISTING_MAX_RAW_BYTES
from live_memory.core.errors import IndexStopped
from live_memory.fs.jail import Jail
from live_memory.fs.walk import walk_paths
from live_memory.outline.symbol_store import FileRecord, Stamp, SymbolStore, build_path, read_file, record_of
from live_memory.tools.context import ToolContext, ToolLimits, find_ripgrep
from live_memory.tools.listing import list_files

__all__ = [
    "Refreshed",
    "build_or_refresh",
    "changed_since",
    "directory_stamps",
    "listed_files",
    "main",
    "record",
    "refresh",
    "stamps_of",
]

# Files outside the listing whose change changes it (the walk reads the ignore files inside it).
_SENTINELS = (".git/info/exclude",)


@dataclass
class Refreshed:
    """What a build or refresh did."""

    files: int = 0  # recorded in the index afterwards
    read: int = 0  # read again (new, or their stamp moved)
    parsed: int = 0  # recorded anew (their bytes changed)
    dropped: int = 0  # gone from the workspace
    seconds: float = 0.0
    rebuilt: bool = False


def directory_stamps(root: Path) -> dict[str, int]:
    """The modification time of the root, of every directory ripgrep would enter below it, and of the ignore
    sources outside the listing, by relative path. Blocking (a walk of the tree's directories)."""
    found = {"": os.lstat(root).st_mtime_ns}
    for rel, is_dir in walk_paths(str(root), include_dirs=True):
        if is_dir:
            with contextlib.suppress(OSError):
                found[rel] = os.lstat(root / rel).st_mtime_ns
    for rel in _SENTINELS:
        with contextlib.suppress(OSError):
            found[rel] = os.lstat(root / rel).st_mtime_ns
    return found


def stamps_of(root: Path, paths: Collection[str]) -> dict[str, Stamp]:
    """The stamps of the files that still exist (a stat each, links not followed). Blocking."""
    out: dict[str, Stamp] = {}
    prefix = f"{root}/"
    for path in paths:
        try:
            out[path] = Stamp.of(os.lstat(prefix + path))
        except OSError:
            continue
    return out


def changed_since(root: Path, store: SymbolStore) -> list[str] | None:
    """The recorded files whose stamp moved or that are gone, when no directory changed since the index was
    listed (so no file was added); None when one did (or none was recorded): the files must be listed again.
    Blocking."""
    directories = store.directories()
    if not directories or stamps_now(root, directories) != directories:
        return None
    recorded = store.stamps()
    now = stamps_of(root, recorded)
    return sorted(path for path, stamp in recorded.items() if now.get(path) != stamp)


def stamps_now(root: Path, directories: Collection[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rel in directories:
        with contextlib.suppress(OSError):
            out[rel] = os.lstat(root / rel if rel else root).st_mtime_ns
    return out


async def listed_files(jail: Jail, limits: ToolLimits, *, max_bytes: int = LISTING_MAX_RAW_BYTES) -> list[str] | None:
    """The files the workspace scan searches (ripgrep's listing, secret files left out), or None when ripgrep is
    missing or the listing was cut short (`max_bytes` of names: a cheap way to tell a small workspace)."""
    ripgrep = await asyncio.to_thread(find_ripgrep, limits)
    if ripgrep is None:
        return None
    in_git = await asyncio.to_thread(os.path.exists, jail.root / ".git")
    ctx = ToolContext(jail=jail, limits=limits, ripgrep=ripgrep, in_git=in_git)
    listing = await list_files(ctx, "", max_bytes=max_bytes)
    if not listing.complete:
        return None
    return [path for path in listing.paths if not jail.is_secret(path)]


def refresh(
    store: SymbolStore, jail: Jail, paths: Sequence[str], *, listed: bool, stop: threading.Event | None = None
) -> Refreshed:
    """Bring the index up to date for `paths`: with `listed`, they are the whole listing (recorded files missing
    from it are forgotten); else they are the files that may have changed (those gone are forgotten). Raises
    IndexStopped once `stop` is set. Blocking."""
    started = time.monotonic()
    done = Refreshed()
    recorded = store.stamps() if listed else store.stamps_of(paths)
    now = stamps_of(jail.root, paths)
    gone = [path for path in (recorded if listed else paths) if path in recorded and path not in now]
    store.drop(gone)
    done.dropped = len(gone)
    stale = [path for path in paths if path in now and recorded.get(path) != now[path]]
    restamped: list[tuple[str, Stamp]] = []
    for batch in _batches(stale, C.SYMBOL_INDEX_BATCH_FILES):
        records: list[FileRecord] = []
        for path in batch:
            if stop is not None and stop.is_set():
                raise IndexStopped(f"stopped after {done.read} of {len(stale)} files")
            done.read += 1
            found = read_file(jail, path)
            if found is None:
                records.append(record_of(path, now[path], None))
                continue
            stamp, data = found
            sha256 = hashlib.sha256(data).hexdigest()
            if path in recorded and store.sha256_of(path) == sha256:
                restamped.append((path, stamp))  # touched, or written back as it was
                continue
            records.append(record_of(path, stamp, data, sha256))
        store.put(records)
        done.parsed += len(records)
    store.restamp(restamped)
    done.files = len(store)
    done.seconds = round(time.monotonic() - started, 3)
    return done


def build(
    root: Path,
    index: Path,
    jail: Jail,
    paths: Sequence[str],
    directories: dict[str, int],
    stop: threading.Event | None = None,
) -> Refreshed:
    """A new index of every listed file, renamed into place when complete. Blocking."""
    started = time.monotonic()
    building = build_path(index)
    store = SymbolStore.create(building, str(root))
    try:
        done = refresh(store, jail, paths, listed=True, stop=stop)
        store.set_directories(directories)
        store.complete()
    finally:
        store.close()
    os.replace(building, index)
    done.rebuilt = True
    done.seconds = round(time.monotonic() - started, 3)
    return done


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def record(
    root: Path,
    index: Path,
    jail: Jail,
    paths: Sequence[str],
    directories: dict[str, int],
    *,
    rebuild: bool,
    stop: threading.Event | None = None,
) -> Refreshed:
    """Record the listed files: into the trusted index at `index` (refreshed in place), or, without one or with
    `rebuild`, into a new one. `directories`: their stamps, taken before the files were listed. Blocking."""
    store = None if rebuild else SymbolStore.open(index, str(root))
    if store is None:
        return build(root, index, jail, paths, directories, stop)
    try:
        done = refresh(store, jail, paths, listed=True, stop=stop)
        store.set_directories(directories)
        return done
    finally:
        store.close()


async def build_or_refresh(root: Path, index: Path, secret_globs: tuple[str, ...], *, rebuild: bool) -> Refreshed:
    """What the child does: stamp the directories, list the files, record them."""
    jail = await asyncio.to_thread(Jail, root, secret_globs)
    directories = await asyncio.to_thread(directory_stamps, jail.root)
    paths = await listed_files(jail, ToolLimits(secret_globs=secret_globs))
    if paths is None:
        raise RuntimeError("the workspace could not be listed (ripgrep missing, or the listing was cut short)")
    return await asyncio.to_thread(record, jail.root, index, jail, paths, directories, rebuild=rebuild)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m live_memory.tools.index_child", description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("index", type=Path)
    parser.add_argument("--secret-glob", action="append", default=[])
    parser.add_argument("--rebuild", action="store_true", help="ignore the index there is and build a new one")
    args = parser.parse_args(argv)
    os.umask(0o077)  # the index holds the code's names and lines: private, like the snapshots beside it
    with contextlib.suppress(OSError):
        os.nice(C.SYMBOL_INDEX_NICE)
    try:
        done = asyncio.run(build_or_refresh(args.root, args.index, tuple(args.secret_glob), rebuild=args.rebuild))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(asdict(done)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
