"""The workspace directory tree for the model's stable prompt prefix.

Owns listing the workspace once (`git ls-files -z --cached --others --exclude-standard` in a git
repository — one subprocess — else the tools' gitignore-aware walker) and rendering it
deterministically within a character budget: two-space indentation, directories ("name/") before
files, each sorted by name. When the full tree does not fit, directories are collapsed to
"name/ (N files)", deepest first and, at equal depth, largest first, so the top levels survive;
if even that is too long the listing is cut with a count of what was left out. Secret files are
named but marked "[withheld: secret]"; a secret directory is always collapsed.

Must never: exceed budget_chars, depend on anything but the file list (the text is cached by the
provider, so the same files must give the same bytes), list .git, read file contents, or block the
event loop (the listing and the rendering run in worker threads or subprocesses).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from live_memory.constants import (
    DEFAULT_SECRET_GLOBS,
    TREE_MAX_LISTING_BYTES,
    TREE_MAX_WALK_FILES,
    TREE_TIMEOUT_S,
)
from live_memory.fs.jail import Jail, SecretMatcher
from live_memory.fs.subproc import run_bounded
from live_memory.fs.walk import walk_paths

__all__ = ["Listing", "TreePolicy", "build_directory_tree", "list_workspace", "render_tree"]

_INDENT = "  "
SECRET_TAG = " [withheld: secret]"
NESTED_REPO_TAG = " [separate git repository]"


@dataclass(frozen=True)
class TreePolicy:
    """How large a workspace's tree renders, fixed per settings snapshot. Its tokens are `configured_tokens`,
    or more when the prompt's head (`head_chars` of instructions and tool schemas before the tree) would
    otherwise be shorter than the model's minimum cacheable prefix, `cache_floor_tokens`: the head's
    breakpoint is then never written, and every question pays for the head in full, where a few hundred
    tokens more of tree are read from the cache at a tenth of the price. Never more than `max_share` of the
    window's budget."""

    configured_tokens: int
    cache_floor_tokens: int
    head_chars: int
    max_share: float
    secret_globs: tuple[str, ...] = DEFAULT_SECRET_GLOBS

    def budget_chars(self, budget_tokens: int, chars_per_token: float) -> int:
        head = math.ceil(self.head_chars / chars_per_token)
        tokens = min(budget_tokens * self.max_share, max(self.configured_tokens, self.cache_floor_tokens - head))
        return int(tokens * chars_per_token)

    def room_below_floor(self, tree_chars: int, budget_tokens: int, chars_per_token: float) -> int:
        """Characters the head still lacks of the cache minimum with a tree of `tree_chars` (0 when none),
        within the tree's share of the window."""
        floor = min(self.cache_floor_tokens * chars_per_token, budget_tokens * self.max_share * chars_per_token)
        return max(0, int(floor) - self.head_chars - tree_chars)


@dataclass(frozen=True)
class Listing:
    """The workspace's files (relative paths) and the jail they were listed under; `complete` is False when
    the listing stopped early (too many files, too slow)."""

    jail: Jail
    paths: list[str]
    complete: bool


async def list_workspace(
    root: Path, secret_globs: Sequence[str] = DEFAULT_SECRET_GLOBS, timeout_s: float = TREE_TIMEOUT_S
) -> Listing:
    """List the workspace (git's view, else the walker's). Never raises for an unreadable workspace (it lists
    what it could); CancelledError propagates."""
    jail = await asyncio.to_thread(Jail, root, secret_globs)  # resolves the root: filesystem calls
    listed, complete = await _git_listing(jail.root, timeout_s)
    if listed is None:
        listed, complete = await _walk_listing(jail.root, timeout_s)
    return Listing(jail, listed, complete)


async def build_directory_tree(
    root: Path,
    *,
    budget_chars: int,
    secret_globs: Sequence[str] = DEFAULT_SECRET_GLOBS,
    timeout_s: float = TREE_TIMEOUT_S,
) -> str:
    """List the workspace and render it within `budget_chars` characters. Never raises for an
    unreadable workspace (it renders what it could list); CancelledError propagates."""
    listing = await list_workspace(root, secret_globs, timeout_s)
    return await asyncio.to_thread(render_tree, listing.paths, budget_chars, listing.jail.secrets, listing.complete)


async def _git_listing(root: Path, timeout_s: float) -> tuple[list[str] | None, bool]:
    argv = [
        "git",
        "-c",
        "core.fsmonitor=false",
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]
    try:
        result = await run_bounded(argv, cwd=root, timeout_s=timeout_s, max_bytes=TREE_MAX_LISTING_BYTES)
    except OSError:
        return None, True  # no git: walk instead
    if result.returncode not in (0, None):
        return None, True  # not a repository (or a broken one): walk instead
    entries = result.stdout.decode("utf-8", "replace").split("\0")
    complete = not (result.truncated or result.timed_out)
    if not complete:
        entries = entries[:-1]  # possibly cut mid-name
    return entries, complete


async def _walk_listing(root: Path, timeout_s: float) -> tuple[list[str], bool]:
    """The gitignore-aware walk for a workspace that is not a git repository (bounded in time and
    size: it may be something as large as a home directory)."""
    stop = threading.Event()
    deadline = time.monotonic() + timeout_s

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    def walk() -> tuple[list[str], bool]:
        paths: list[str] = []
        for rel, _is_dir in walk_paths(str(root), should_stop=should_stop):
            paths.append(rel)
            if len(paths) >= TREE_MAX_WALK_FILES:
                return paths, False
        return paths, not should_stop()

    try:
        return await asyncio.to_thread(walk)
    finally:
        stop.set()  # on cancellation the walker stops at its next directory


class _Dir:
    """One directory of the listing. Sizes are in characters of rendered text."""

    __slots__ = (
        "collapsed",
        "depth",
        "dirs",
        "file_count",
        "files",
        "name",
        "nested_repo",
        "parent",
        "rel",
        "secret",
        "secret_files",
        "size",
        "tagged",
    )

    def __init__(self, name: str, rel: str, depth: int, parent: _Dir | None, secret: bool) -> None:
        self.name = name
        self.rel = rel
        self.depth = depth  # 1 for a top-level directory; 0 for the root
        self.parent = parent
        self.secret = secret  # it, or a directory above it, matches the secret guard
        self.dirs: dict[str, _Dir] = {}
        self.files: list[str] = []  # base names, unsorted until rendered
        self.secret_files: set[str] = set()
        self.tagged = False  # secret_files computed
        self.nested_repo = False
        self.file_count = 0  # files in the whole subtree
        self.size = 0  # the rendered subtree below this directory's own line
        self.collapsed = False


def _collapsed_line(node: _Dir) -> str:
    noun = "file" if node.file_count == 1 else "files"
    tag = SECRET_TAG if node.secret else ""
    return f"{_INDENT * (node.depth - 1)}{node.name}/ ({node.file_count} {noun}){tag}\n"


def _open_line(node: _Dir) -> str:
    tag = NESTED_REPO_TAG if node.nested_repo else ""
    return f"{_INDENT * (node.depth - 1)}{node.name}/{tag}\n"


def _open_len(node: _Dir) -> int:
    return len(_INDENT) * (node.depth - 1) + len(node.name) + 2 + (len(NESTED_REPO_TAG) if node.nested_repo else 0)


def _group(paths: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Base names by directory, and the nested repositories ("dir/" entries). This is the only
    per-file Python loop, kept minimal: a 100k-file listing must render in a fraction of the time
    `git ls-files` takes to produce it."""
    by_dir: dict[str, list[str]] = {}
    nested: list[str] = []
    current = None
    bucket: list[str] = []
    previous = None
    for path in paths:
        if path == previous:  # git lists a conflicted file once per stage, adjacently
            continue
        previous = path
        directory, _, name = path.rpartition("/")
        if not name:
            if directory:  # an untracked nested repository, listed but not entered by git
                nested.append(directory)
            continue
        if directory != current:  # listings come sorted, so runs of one directory are common
            current = directory
            found = by_dir.get(directory)
            if found is None:
                found = by_dir[directory] = []
            bucket = found
        bucket.append(name)
    return by_dir, nested


def _build(paths: list[str], secrets: SecretMatcher) -> _Dir:
    """One node per distinct directory (secret directories marked), files attached unsorted."""
    by_dir, nested = _group(paths)
    root = _Dir("", "", 0, None, False)
    nodes: dict[str, _Dir] = {"": root}
    # Directory names repeat (locale/xx/LC_MESSAGES, tests/...): match each distinct name once.
    name_verdict: dict[str, tuple[bool, bool]] = {}  # name -> (secret by name, could end a "/" pattern)

    def node_for(rel: str) -> _Dir:
        found = nodes.get(rel)
        if found is not None:
            return found
        parent_rel, _, name = rel.rpartition("/")
        parent = node_for(parent_rel)
        secret = parent.secret
        if not secret:
            verdict = name_verdict.get(name)
            if verdict is None:
                verdict = name_verdict[name] = (secrets.name_matches(name), secrets.tail_matches(name))
            secret = verdict[0] or (verdict[1] and secrets.path_matches(rel))
        node = _Dir(name, rel, parent.depth + 1, parent, secret)
        parent.dirs[name] = node
        nodes[rel] = node
        return node

    for directory, names in by_dir.items():
        node = node_for(directory)
        # A file can be listed twice (tracked and, once deleted and re-created, untracked): dedupe.
        node.files = names if len(names) == len(set(names)) else list(set(names))
    for rel in nested:
        node_for(rel).nested_repo = True
    return root


def _measure(root: _Dir) -> list[_Dir]:
    """Fill file_count and size (secret tags not yet counted) bottom-up; return all but the root."""
    order: list[_Dir] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.dirs.values())
    indent_len = len(_INDENT)
    for node in reversed(order):  # children before parents
        files = node.files
        size = len("".join(files)) + len(files) * (indent_len * node.depth + 1)
        count = len(files)
        for child in node.dirs.values():
            count += child.file_count
            size += _open_len(child) + child.size
        node.file_count = count
        node.size = size
    for node in order:  # secret directories are always shown collapsed
        if node.secret and node.parent is not None and not node.parent.secret:
            _collapse(node)
    return order[1:]


def _tag_secrets(root: _Dir, secrets: SecretMatcher) -> bool:
    """Find the secret files of every visible directory not yet checked and count their tags in the
    sizes. Only visible files are checked (a small share of a big listing), each distinct name once."""
    fresh: list[_Dir] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(child for child in node.dirs.values() if not child.collapsed)
        if not node.tagged:
            node.tagged = True
            fresh.append(node)
    names: set[str] = set().union(*(node.files for node in fresh))
    by_name = secrets.matching_names(names)
    tails = secrets.tail_candidates(names)
    added = False
    for node in fresh:
        found = by_name.intersection(node.files)
        for name in tails.intersection(node.files):
            if secrets.path_matches(f"{node.rel}/{name}" if node.rel else name):
                found.add(name)
        if found:
            node.secret_files = found
            _grow(node, len(SECRET_TAG) * len(found))
            added = True
    return added


def _grow(node: _Dir, delta: int) -> None:
    """Add delta characters to a directory's subtree size and to all its ancestors'."""
    current: _Dir | None = node
    while current is not None:
        current.size += delta
        current = current.parent


def _collapse(node: _Dir) -> int:
    """Collapse one directory; returns the change in total size (also applied to its ancestors)."""
    delta = len(_collapsed_line(node)) - (_open_len(node) + node.size)
    node.collapsed = True
    if node.parent is not None:
        _grow(node.parent, delta)
    return delta


def _header(total: int, collapsed: bool, complete: bool) -> str:
    line = f"{total} file{'' if total == 1 else 's'}"
    if collapsed:
        line += '; "dir/ (N files)" is collapsed: list it with find_paths'
    if not complete:
        line += "; listing cut short (time or size cap): some files are missing"
    return line + "\n"


def _footer(missing: int) -> str:
    return f"... ({missing} more entries not shown: use find_paths or Glob)\n"


def render_tree(paths: list[str], budget_chars: int, secrets: SecretMatcher, complete: bool = True) -> str:
    """Render a file list (workspace-relative POSIX paths) as an indented tree within budget_chars."""
    root = _build(paths, secrets)
    dirs = _measure(root)
    if root.file_count == 0:
        empty = "(no files)" if complete else "(no files listed: the listing was cut short by its time or size cap)"
        return empty[: max(budget_chars, 0)]
    # Decide with the longer (collapsed) header so the choice never depends on itself.
    room = budget_chars - len(_header(root.file_count, True, complete))
    order = sorted(dirs, key=lambda d: (-d.depth, -d.size, d.rel))
    next_index = 0
    while True:
        while root.size > room and next_index < len(order):
            node = order[next_index]
            next_index += 1
            if not node.collapsed and not node.secret:  # inside a secret directory: already hidden
                _collapse(node)
        # Tags of newly visible secret files may push the size back over: collapse further if so.
        if not _tag_secrets(root, secrets) or root.size <= room or next_index >= len(order):
            break
    header = _header(root.file_count, any(d.collapsed for d in dirs), complete)
    # Still too long (a huge flat directory): cut the listing and keep room to say how much is missing.
    reserve = 0 if root.size + len(header) <= budget_chars else len(_footer(root.file_count + len(dirs)))
    return _emit(root, header, budget_chars - reserve)[: max(budget_chars, 0)]  # the last guard


def _emit(root: _Dir, header: str, limit: int) -> str:
    """Write the visible lines depth-first (directories before files, each sorted by name) until
    `limit` characters; past that only count what is left for the footer."""
    out: list[str] = [header]
    used = len(header)
    missing = 0
    stack: list[_Dir | str] = [root]  # a directory to expand, or a ready-made line
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if missing or used + len(item) > limit:
                missing += 1
            else:
                out.append(item)
                used += len(item)
            continue
        if missing:  # over budget already: count this directory's entries without rendering them
            missing += len(item.files) + len(item.dirs)
            stack.extend(child for child in item.dirs.values() if not child.collapsed)
            continue
        pending: list[_Dir | str] = []
        for name in sorted(item.dirs):
            child = item.dirs[name]
            if child.collapsed:
                pending.append(_collapsed_line(child))
            else:
                pending.append(_open_line(child))
                pending.append(child)
        indent = _INDENT * item.depth
        secret_files = item.secret_files
        pending.extend(f"{indent}{name}{SECRET_TAG if name in secret_files else ''}\n" for name in sorted(item.files))
        stack.extend(reversed(pending))
    if missing:
        out.append(_footer(missing))
    return "".join(out).rstrip("\n")
