"""The path jail: the one resolver every file access of the tools and the directory tree goes through.

Owns the rules for which paths a model may touch:
- Inputs are workspace-relative POSIX paths. Absolute paths are accepted only when they lie inside the
  workspace root (the /notify hook and Claude-trained models send absolute paths); they are turned into
  relative ones. "\\" is read as "/" (Windows-style separators). "..", "~", drive letters, NUL bytes and
  overlong names are refused before the filesystem is touched.
- Symbolic links are followed by the kernel's rules (chains, symlinked directories, "/proc/self/root")
  and the *real* target must stay inside the real root.
- ".git" internals are never exposed (history goes through git_search / get_changed_files).
- Secret files (credential globs) are withheld: listings may name them, but no content leaves.
- Only regular text files are opened: devices, FIFOs, sockets and binaries (NUL in the first 8 KiB)
  are refused. Opening walks the resolved real path from the root without following any link
  (safe_files.open_beneath), so a file or directory swapped for a link after the check is refused.

Must never: read a byte outside the real root, follow a path it has not re-validated after resolving,
or raise anything but JailRefusal for a policy refusal (OS errors such as "not found" pass through).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from live_memory.constants import (
    BINARY_SNIFF_BYTES,
    DEFAULT_SECRET_GLOBS,
    MAX_PATH_CHARS,
    MAX_PATH_COMPONENT_BYTES,
)
from live_memory.core.errors import JailRefusal, NotRegularFileError, describe_mode
from live_memory.fs.globs import glob_to_regex
from live_memory.fs.safe_files import open_beneath

__all__ = ["Jail", "SecretMatcher", "show_path"]

_DRIVE = re.compile(r"^[A-Za-z]:(?:/|$)")
CLEAR_DIRS_CACHE_SIZE = 4096  # directories a SecretMatcher remembers as not secret (then it starts over)
_EXAMPLE = "use a path relative to the workspace root, e.g. 'src/app.py'"


def show_path(path: str, limit: int = 120) -> str:
    """Render an untrusted path for a message: control characters escaped, length capped."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SecretMatcher:
    """Case-insensitive credential-file matcher (see DEFAULT_SECRET_GLOBS for the pattern rules).

    A path is secret when it, or any directory above it, matches: a virtualenv named ".env" or a
    "secrets/**" pattern withholds everything beneath, exactly as ripgrep's exclude globs prune it.
    """

    def __init__(self, globs: Sequence[str]) -> None:
        self.globs = tuple(g.strip() for g in globs if g.strip())
        names: list[str] = []
        paths: list[str] = []
        tails: list[str] = []  # last component of each "/" pattern: a cheap prefilter on base names
        for glob in self.globs:
            body = glob.rstrip("/") or glob
            if body.startswith("/"):
                paths.append(glob_to_regex(body.lstrip("/")))
            elif "/" in body:
                paths.append("(?:.*/)?" + glob_to_regex(body))
            else:
                names.append(glob_to_regex(body))
            if "/" in body.lstrip("/"):
                tails.append(glob_to_regex(body.rpartition("/")[2]))
        try:
            self._name = _union(names)
            self._path = _union(paths)
            self._tail = _union(tails)
        except re.error as exc:
            raise ValueError(f"invalid secret_globs pattern in {list(self.globs)!r}: {exc}") from None
        # Directories found not secret (nor any above them): the patterns never change, and the files
        # of one directory come in bunches, so only a path's base name is matched again.
        self._clear_dirs: dict[str, None] = {}

    def name_matches(self, name: str) -> bool:
        """Whether one path component (a base name) matches a name pattern."""
        return self._name is not None and self._name.fullmatch(name) is not None

    def path_matches(self, rel_path: str) -> bool:
        """Whether this exact path matches a pattern that contains "/" (ancestors not checked)."""
        return self._path is not None and self._path.fullmatch(rel_path) is not None

    def matching_names(self, names: Iterable[str]) -> set[str]:
        """The base names a name pattern matches (bulk form of name_matches, for big listings)."""
        return set(filter(self._name.fullmatch, names)) if self._name is not None else set()

    def tail_matches(self, name: str) -> bool:
        """Whether a base name could end a path that a "/" pattern matches."""
        return self._tail is not None and self._tail.fullmatch(name) is not None

    def tail_candidates(self, names: Iterable[str]) -> set[str]:
        """The base names that could end a path a "/" pattern matches (check those with path_matches)."""
        return set(filter(self._tail.fullmatch, names)) if self._tail is not None else set()

    def matches(self, rel_path: str) -> bool:
        """Whether a workspace-relative path, or any directory above it, is secret."""
        if not rel_path or rel_path == ".":
            return False
        folder, _, name = rel_path.rpartition("/")
        if folder and folder not in self._clear_dirs:
            if self._matches_any(folder):
                return True
            if len(self._clear_dirs) >= CLEAR_DIRS_CACHE_SIZE:
                self._clear_dirs.clear()
            self._clear_dirs[folder] = None
        if self._name is not None and self._name.fullmatch(name):
            return True
        return self._path is not None and self._path.fullmatch(rel_path) is not None

    def _matches_any(self, rel_path: str) -> bool:
        """`matches` without the cache: every component and every leading part of the path."""
        parts = rel_path.split("/")
        if self._name is not None and any(self._name.fullmatch(p) for p in parts):
            return True
        if self._path is not None:
            for i in range(1, len(parts) + 1):
                if self._path.fullmatch("/".join(parts[:i])):
                    return True
        return False

    def ripgrep_excludes(self, start_rel: str = "") -> list[str]:
        """The same rules as ripgrep `--iglob` negations, for ripgrep started in `start_rel` (""
        for the root). A root-anchored pattern is re-anchored to the start when its leading
        components are literally the start's; one that cannot match below the start, or cannot be
        re-anchored (a wildcard there), is left out: this only prunes the search, and the formatter
        withholds secret paths whatever ripgrep returns."""
        start = [p for p in start_rel.split("/") if p]
        out: list[str] = []
        for glob in self.globs:
            body = glob.rstrip("/") or glob
            if not body.startswith("/"):
                out.append("!" + body if "/" not in body else "!**/" + body)
                continue
            parts = body.lstrip("/").split("/")
            lead = parts[: len(start)]
            same = [p.casefold() for p in lead] == [p.casefold() for p in start]  # --iglob ignores case
            if len(parts) > len(start) and same and not any(map(_has_magic, lead)):
                out.append("!/" + "/".join(parts[len(start) :]))
        return out


@functools.lru_cache(maxsize=32)
def secret_matcher(globs: tuple[str, ...]) -> SecretMatcher:
    """One shared matcher per glob list: compiling the globs costs more than a Jail's whole check of a
    path, and a Jail is built per batch of file events."""
    return SecretMatcher(globs)


def _has_magic(part: str) -> bool:
    return any(ch in part for ch in "*?[{\\")


def _union(sources: list[str]) -> re.Pattern[str] | None:
    if not sources:
        return None
    return re.compile("|".join(f"(?:{s})" for s in sources), re.IGNORECASE | re.DOTALL)


class Jail:
    """Resolves untrusted paths against one workspace root; see the module docstring for the rules."""

    def __init__(
        self, root: Path, secret_globs: Sequence[str] = DEFAULT_SECRET_GLOBS, *, remember_dirs: bool = False
    ) -> None:
        """`remember_dirs`: a jail built for one batch of paths (the file events of one request) lstats a
        directory once: found free of symbolic links, it is taken as such for the rest of the batch
        (which is checked at one moment anyway, like any single path). Off for long-lived jails."""
        if not root.is_absolute():
            raise ValueError(f"workspace root must be an absolute path, got {str(root)!r}")
        self.root = Path(os.path.realpath(root))
        self._root_str = str(self.root)
        self._root_prefix = self._root_str.rstrip("/") + "/"
        # The caller's spelling of the root is accepted too (it may run through a symlink, e.g. /tmp).
        spelled = os.path.normpath(str(root))
        self._accepted_roots = tuple(dict.fromkeys((self._root_str, spelled)))
        self._accepted_prefixes = tuple(r.rstrip("/") + "/" for r in self._accepted_roots)
        self.secrets = secret_matcher(tuple(secret_globs))
        self._dirs: set[str] | None = set() if remember_dirs else None  # real directories without a link

    # -- lexical checks ---------------------------------------------------------------------------------
    def normalize(self, path: str) -> str:
        """Lexically turn an untrusted path into a clean workspace-relative one ("" is the root).

        Raises JailRefusal for anything that is not plainly a path inside the workspace.
        """
        if not isinstance(path, str):
            raise JailRefusal(f"path must be a string, got {type(path).__name__}")
        if "\x00" in path:
            raise JailRefusal(f"path '{show_path(path)}' contains a NUL byte; {_EXAMPLE}")
        if len(path) > MAX_PATH_CHARS:
            raise JailRefusal(f"path is {len(path)} characters long (the limit is {MAX_PATH_CHARS}); {_EXAMPLE}")
        text = path.strip().replace("\\", "/")
        if text.startswith("~"):
            raise JailRefusal(f"'{show_path(path)}' is a home-directory path; tools only see the workspace: {_EXAMPLE}")
        if _DRIVE.match(text):
            raise JailRefusal(f"'{show_path(path)}' is outside the workspace; {_EXAMPLE}")
        parts = text.split("/")
        if ".." in parts:
            raise JailRefusal(f"'..' is not allowed in '{show_path(path)}': tools only see the workspace; {_EXAMPLE}")
        if text.startswith("/"):
            text = self._strip_root(text, path)
        clean = [p for p in text.split("/") if p not in ("", ".")]
        short = text.isascii() and len(text) <= MAX_PATH_COMPONENT_BYTES  # then no component can be too long
        for part in () if short else clean:
            try:
                size = len(part) if part.isascii() else len(os.fsencode(part))  # ASCII: one byte a character
            except UnicodeEncodeError:
                raise JailRefusal(f"path '{show_path(path)}' is not valid UTF-8; {_EXAMPLE}") from None
            if size > MAX_PATH_COMPONENT_BYTES:
                raise JailRefusal(
                    f"a component of '{show_path(path)}' is {size} bytes long (the limit is {MAX_PATH_COMPONENT_BYTES})"
                )
        rel = "/".join(clean)
        self._check_policy(rel, path)
        return rel

    def _strip_root(self, text: str, path: str) -> str:
        for prefix in self._accepted_prefixes:  # as written under the root: the caller drops "" and "."
            if text.startswith(prefix):
                return text[len(prefix) :]
        normal = os.path.normpath(text)
        for root in self._accepted_roots:
            if normal == root:
                return ""
            if normal.startswith(root.rstrip("/") + "/"):
                return normal[len(root.rstrip("/")) + 1 :]
        raise JailRefusal(f"'{show_path(path)}' is outside the workspace; {_EXAMPLE}")

    def _check_policy(self, rel: str, path: str) -> None:
        if ".git" in rel.casefold() and any(p.casefold() == ".git" for p in rel.split("/")):
            raise JailRefusal(
                f"'{show_path(path)}' is inside .git (git's internal data), which the tools do not expose; "
                "use git_search for history and get_changed_files for the working-tree status"
            )
        if self.secrets.matches(rel):
            raise JailRefusal(
                f"'{show_path(path)}' is withheld: it matches the secret-file guard (secret_globs), "
                "so its contents stay out of context"
            )

    # -- resolution -------------------------------------------------------------------------------------
    def resolve(self, path: str, *, allow_dir: bool = False) -> Path:
        """Resolve an untrusted path to a real absolute path inside the workspace.

        The path need not exist (callers report "not found"); a directory is refused unless allow_dir.
        Blocking (a few lstat calls): async callers run it in a thread.
        """
        return Path(self._resolve(self.normalize(path), path, allow_dir))

    def resolve_relative(self, rel: str, *, allow_dir: bool = False) -> Path:
        """`resolve` for a path `normalize` already returned (callers that need both, without the work twice)."""
        return Path(self._resolve(rel, rel, allow_dir))

    def check_relative(self, rel: str, *, allow_dir: bool = False) -> None:
        """`resolve_relative` for a caller that only needs the verdict (it raises JailRefusal the same way)."""
        self._resolve(rel, rel, allow_dir)

    def _resolve(self, rel: str, path: str, allow_dir: bool) -> str:
        plain, is_dir = self._walk(rel)
        if plain is not None:  # no symbolic link on the way: the real path is the path as written
            if not allow_dir and is_dir:
                raise JailRefusal(f"'{show_path(path)}' is a directory, not a file; use Glob or find_paths to list it")
            return plain
        shown = show_path(path)
        try:
            real = os.path.realpath(os.path.join(self._root_str, rel) if rel else self._root_str)
        except (OSError, ValueError):
            raise JailRefusal(f"'{shown}' cannot be resolved; {_EXAMPLE}") from None
        if real != self._root_str and not real.startswith(self._root_prefix):
            raise JailRefusal(f"'{shown}' is a symbolic link that resolves outside the workspace; it cannot be used")
        real_rel = self.relative(Path(real))
        if real_rel != rel:  # reached through a symlink: the target must pass the same policy
            self._check_policy("" if real_rel == "." else real_rel, shown)
        if not allow_dir and os.path.isdir(real):
            raise JailRefusal(f"'{shown}' is a directory, not a file; use Glob or find_paths to list it")
        return real

    def _walk(self, rel: str) -> tuple[str | None, bool]:
        """(the joined path, whether it is a directory) when no component of root/`rel` is a symbolic
        link, else (None, False): the lstat walk realpath() makes, without its bookkeeping or the
        extra stat of isdir(). A missing component ends the walk as realpath() treats it (the rest
        is kept as written, and it is no directory)."""
        if not rel:
            return None, False
        full = self._root_prefix + rel  # `rel` is normalized: relative, no empty or "." component
        dirs = self._dirs
        if dirs is None:
            parts, current = full.split("/")[1:], ""
        elif full in dirs:
            return full, True
        else:  # start below the deepest directory this batch has seen already
            current = full.rpartition("/")[0]
            while current and current not in dirs:
                current = current.rpartition("/")[0]
            parts = full[len(current) + 1 :].split("/")
        mode = 0
        for part in parts:
            current = f"{current}/{part}"
            try:
                mode = os.lstat(current).st_mode
            except (OSError, ValueError):
                return full, False
            if stat.S_ISLNK(mode):
                return None, False
            if dirs is not None and stat.S_ISDIR(mode):
                dirs.add(current)
        return full, stat.S_ISDIR(mode)

    def relative(self, path: Path) -> str:
        """The POSIX workspace-relative form of a real path inside the root ("." for the root)."""
        text = str(path)
        if text == self._root_str:
            return "."
        if text.startswith(self._root_prefix):
            return text[len(self._root_prefix) :]
        raise JailRefusal(f"'{show_path(text)}' is outside the workspace")

    def is_secret(self, rel_path: str) -> bool:
        """Whether a workspace-relative path is withheld by the secret guard."""
        return self.secrets.matches(rel_path)

    # -- opening ----------------------------------------------------------------------------------------
    def open_text(self, path: Path) -> BinaryIO:
        """`open_text_fd` as a binary file object (the caller closes it)."""
        return open(self.open_text_fd(path), "rb", closefd=True)

    def open_text_fd(self, path: Path) -> int:
        """Open a resolved path for reading, refusing anything but a regular text file; returns the
        descriptor (the caller closes it).

        The path is opened beneath the root one component at a time, none followed if it is a
        symbolic link (`safe_files.open_beneath`): `resolve` returns link-free real paths, so a link
        found now was swapped in after the check and the call is refused rather than followed. The
        secret guard is applied to the path actually opened. Raises JailRefusal for policy (devices,
        FIFOs, sockets, directories, binaries, links, secrets), OSError (FileNotFoundError...) otherwise.
        """
        rel = self.relative(path)
        shown = show_path(rel)
        if rel != ".":
            self._check_policy(rel, shown)
        fd = self._open_beneath(rel, shown, directory=False)
        try:
            if b"\x00" in os.pread(fd, BINARY_SNIFF_BYTES, 0):
                raise JailRefusal(f"'{shown}' is a binary file; only text files can be read")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_dir(self, path: Path) -> int:
        """A descriptor of a resolved directory (the root for the root), opened like `open_text`:
        no symbolic link followed on the way. The caller closes it. Raises JailRefusal or OSError."""
        rel = self.relative(path)
        return self._open_beneath("" if rel == "." else rel, show_path(rel), directory=True)

    def _open_beneath(self, rel: str, shown: str, *, directory: bool) -> int:
        try:
            return open_beneath(self._root_str, "" if rel == "." else rel, directory=directory)
        except NotRegularFileError as exc:
            if exc.is_link:  # `resolve` leaves only loops; anything else was swapped in after the check
                inner = f"has a symbolic link in its path ('{show_path(exc.path)}')"
                what = "is a symbolic link" if exc.path == rel else inner
                raise JailRefusal(
                    f"'{shown}' {what} that does not resolve (a loop), or that was swapped in while it was "
                    "being opened; links are not followed there, so it cannot be read"
                ) from None
            if exc.path != rel:  # a leading component is a file, FIFO...: the path does not exist as named
                raise FileNotFoundError(errno.ENOTDIR, f"'{shown}' does not exist") from None
            _require_regular(exc.mode, shown, directory=directory)
            raise

    def is_readable_text(self, path: Path) -> bool:
        """Whether `path` is a regular, non-binary file this jail would open."""
        try:
            with self.open_text(path):
                return True
        except (JailRefusal, OSError):
            return False


def _require_regular(mode: int, shown: str, *, directory: bool = False) -> None:
    """Return if `mode` is what was asked for (a regular file, or a directory); else refuse, saying why."""
    if directory:
        if stat.S_ISDIR(mode):
            return
        raise JailRefusal(f"'{shown}' is {describe_mode(mode)}, not a directory")
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise JailRefusal(f"'{shown}' is a directory, not a file; use Glob or find_paths to list it")
    raise JailRefusal(f"'{shown}' is {describe_mode(mode)}; only regular text files can be read")
