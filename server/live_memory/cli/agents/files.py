"""The files every agent's installer touches the same way, whatever the agent.

Owns: the service URL an agent is pointed at, reading a config as UTF-8 text, where the hook scripts come
from (the copy inside the installed package, which a wheel carries, else a checkout's hooks/ folder) and their
copy under the agent's home (a path that outlives where they came from), and `Changes`: every file an install
or uninstall writes or removes, planned first and applied together, so a refusal changes nothing on disk and a
failed write puts back what was already written. Never decides what goes into an agent's own configuration:
that is each agent's module.
"""

from __future__ import annotations

import contextlib
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import live_memory
from live_memory.cli.agents import note
from live_memory.core.errors import ConfigError
from live_memory.fs.safe_files import atomic_write

# The hook scripts: a copy inside the package (what a wheel carries: setup.py puts it there), else a checkout's.
PACKAGED_HOOKS = Path(live_memory.__file__).resolve().parent / "agent_hooks"
CHECKOUT_HOOKS = Path(live_memory.__file__).resolve().parents[2] / "hooks"
HOOK_DIR_NAME = "live-memory"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NO_HOOK = (
    "hook: not installed (this installation of Live Memory has no hook scripts: reinstall the package);"
    " the service's file watcher still sees every edit"
)


def hook_scripts(names: Sequence[str] = ("notify.py", "_client.py")) -> Path | None:
    """The folder holding the hook scripts `names`: the package's copy, else the checkout's; None when neither."""
    for folder in (PACKAGED_HOOKS, CHECKOUT_HOOKS):
        if all((folder / name).is_file() for name in names):
            return folder
    return None


HOOKS_SOURCE = hook_scripts()


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
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc}); fix it and run again") from None


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


# ------------------------------------------------------------------------------------------ all or nothing


@dataclass
class Changes:
    """The files an install or uninstall writes (`data`) or removes (None), and what each change means in words.

    Planned in full before anything is written (every refusal comes first); `apply` then writes them in order,
    and when one fails puts back the ones already done, so the disk holds all of them or none."""

    files: list[tuple[Path, bytes | None, int]] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    empty_dirs: list[Path] = field(default_factory=list)  # removed after the files, when nothing is left in them

    def write(self, path: Path, text: str | bytes, *, default_mode: int) -> None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:  # missing (or unreachable: then writing it fails, and everything is put back)
            mode = default_mode
        self.files.append((path, text.encode("utf-8") if isinstance(text, str) else text, mode))

    def remove(self, path: Path) -> None:
        self.files.append((path, None, 0))

    def apply(self) -> list[str]:
        done: list[tuple[Path, bytes | None, int, list[Path]]] = []
        try:
            for path, data, mode in self.files:
                before = path.read_bytes() if path.is_file() else None
                old_mode = stat.S_IMODE(path.stat().st_mode) if before is not None else mode
                created = _missing_parents(path) if data is not None else []
                if data is None:
                    path.unlink(missing_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(path, data, mode)
                done.append((path, before, old_mode, created))
        except OSError as exc:
            _undo(done)
            raise ConfigError(
                f"could not write {exc.filename or path} ({exc.strerror or exc}); nothing was changed"
            ) from None
        for folder in self.empty_dirs:
            _remove_if_empty(folder)
        return self.said


def _missing_parents(path: Path) -> list[Path]:
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing


def _undo(done: list[tuple[Path, bytes | None, int, list[Path]]]) -> None:
    for path, before, mode, created in reversed(done):
        with contextlib.suppress(OSError):
            if before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, before, mode)
            for folder in created:
                folder.rmdir()


def _remove_if_empty(folder: Path) -> None:
    cache = folder / "__pycache__"  # left by the hook scripts when they ran
    with contextlib.suppress(OSError):
        if cache.is_dir():
            for leftover in cache.glob("*.pyc"):
                leftover.unlink()
            cache.rmdir()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def plan_config(changes: Changes, path: Path, text: str, new_text: str, said: Sequence[str]) -> None:
    """An install's edit of the agent's configuration: `said` (what the entries do) when it changes anything."""
    if new_text == text:
        changes.said.append(f"{path}: already up to date")
        return
    changes.write(path, new_text, default_mode=0o600)
    changes.said.extend(said)


def plan_config_removal(changes: Changes, path: Path, text: str, new_text: str, what: str) -> None:
    """An uninstall's edit: `new_text` written, or the file removed when nothing but whitespace is left (install
    created it)."""
    if new_text == text:
        changes.said.append(f"{path}: nothing of Live Memory's to remove")
    elif not new_text.strip():
        changes.remove(path)
        changes.said.append(f"{path}: removed (it held only Live Memory's entries)")
    else:
        changes.write(path, new_text, default_mode=0o600)
        changes.said.append(f"{path}: removed {what}")


def uninstall_all(
    path: Path,
    text: str,
    new_text: str,
    what: str,
    hooks: tuple[Path, Sequence[str]],
    note_in: tuple[Path | None, str, str],
) -> list[str]:
    """The uninstall every installer shares: its configuration edit (`plan_config_removal`), its hook scripts, and
    on request its name taken out of the note (`note_in`: repository or None, the note's file, the agent); all
    written together. Returns what changed, in words."""
    changes = Changes()
    plan_config_removal(changes, path, text, new_text, what)
    plan_hooks_removal(changes, *hooks)
    repository, file_name, agent = note_in
    if repository is not None:
        plan_note(changes, repository, file_name, agent, install=False)
    return changes.apply()


def check_install(url: str, token_env: str | None) -> str:
    """The service's base URL, once it and the token's variable name are known to be usable."""
    check_token_env(token_env)
    return base_url(url)


# ------------------------------------------------------------------------------------------ hook scripts


def has_hooks(source: Path | None, names: Sequence[str]) -> bool:
    return source is not None and all((source / name).is_file() for name in names)


def plan_hooks(changes: Changes, source: Path, target: Path, names: Sequence[str]) -> None:
    """Copy the hook scripts `names` from `source` to `target` (only those that differ)."""
    copied = []
    for name in names:
        data = (source / name).read_bytes()
        destination = target / name
        if not destination.is_file() or destination.read_bytes() != data:
            changes.write(destination, data, default_mode=0o644)
            copied.append(name)
    if copied:
        changes.said.append(f"{target}: copied {', '.join(copied)}")


def plan_hooks_removal(changes: Changes, target: Path, names: Sequence[str]) -> None:
    removed = [name for name in names if (target / name).is_file()]
    for name in removed:
        changes.remove(target / name)
    changes.empty_dirs.append(target)
    if removed:
        changes.said.append(f"{target}: removed {', '.join(removed)}")


# ------------------------------------------------------------------------------------- instructions note


def plan_note(changes: Changes, repository: Path, file_name: str, agent: str, *, install: bool) -> None:
    """The shared note in `repository`'s `file_name` with `agent` added (install) or taken out (uninstall)."""
    if install and not repository.is_dir():
        raise ConfigError(
            f"{repository} is not a directory: pass the repository whose {file_name} should say when to ask"
        )
    path = repository / file_name
    text = read_text(path)
    new_text = note.with_agent(text, agent, path) if install else note.without_agent(text, agent, path)
    before, others = note.agents_in(text, path), note.agents_in(new_text, path) - {agent}
    if new_text == text:
        changes.said.append(
            f"{path}: " + ("Live Memory note already up to date" if install else "no Live Memory note to remove")
        )
    elif not new_text.strip():
        changes.remove(path)
        changes.said.append(f"{path}: removed (it held only the Live Memory note)")
    else:
        changes.write(path, new_text, default_mode=0o644)
        if install:
            verb = (
                "brought the Live Memory note up to date"
                if agent in before
                else f"the Live Memory note now names {agent} too"
                if others
                else "added a note on when to ask Live Memory"
            )
        else:
            verb = (
                f"kept the Live Memory note for {', '.join(sorted(others))}"
                if others
                else "removed the Live Memory note"
            )
        changes.said.append(f"{path}: {verb}")
