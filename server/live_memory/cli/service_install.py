"""Install Live Memory as a systemd service (`live-memory install-service`).

Owns: rendering a unit from the packaged templates (`live_memory/deploy_templates/`, the single source of truth;
`deploy/` at the repository root holds byte-identical copies), the install locations of the user and the system
mode, and the first-time environment file. `render_unit()` is pure; `install_service()` writes the unit (0644),
the env file only when none exists (0600, never overwritten), creates the data dir (0700, the unit's only
writable path), then runs `systemctl [--user] daemon-reload` and `enable --now` and reports what it did.

Never prints or copies a secret: it only names the provider variables the service will not see. Never edits an
existing env file. Refuses paths systemd would split or mis-parse (whitespace, quotes, backslashes, `$`) rather
than quoting them. Refuses (unless forced) an executable, interpreter or data dir under /tmp or /var/tmp: the unit's
PrivateTmp=yes gives the service an empty /tmp of its own, so it could not start from there.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from live_memory.core.errors import ConfigError
from live_memory.fs.safe_files import atomic_write, make_private_dirs
from live_memory.providers.profiles import PROFILES
from live_memory.settings.config import default_data_dir
from live_memory.settings.options import OPTIONS

Mode = Literal["user", "system"]

UNIT_NAME = "live-memory.service"
TEMPLATE_PACKAGE = "live_memory.deploy_templates"
UNIT_TEMPLATES: dict[Mode, str] = {"user": "live-memory.user.service", "system": "live-memory.service"}
ENV_TEMPLATE = "live-memory.env.example"
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
SYSTEM_ENV_FILE = Path("/etc/live-memory/live-memory.env")
LINGER_DIR = Path("/var/lib/systemd/linger")  # a file per user whose manager starts at boot
# A user unit rendered without an explicit data dir uses the user manager's home specifier: the same default
# as config.default_data_dir() when XDG_DATA_HOME is unset.
USER_DATA_DIR_SPECIFIER = "%h/.local/share/live-memory"
# `enable --now` waits for the start job, which includes the unit's readiness check (TimeoutStartSec=45).
SYSTEMCTL_TIMEOUT_S = 90.0
# PrivateTmp=yes mounts a fresh, empty /tmp and /var/tmp for the service: whatever lies there is hidden from it.
PRIVATE_TMP_DIRS = (Path("/tmp"), Path("/var/tmp"))

# The variables the supervisor must hand the server: our provider options plus every provider-native variable
# a profile honours (ANTHROPIC_API_KEY, OPENAI_BASE_URL, OLLAMA_HOST, ...).
_PROVIDER_OPTION_KEYS = ("provider", "base_url", "api_key", "model", "summary_model", "oauth", "oauth_refresh")
PROVIDER_ENV: tuple[str, ...] = tuple(
    sorted(
        {o.env for o in OPTIONS if o.key in _PROVIDER_OPTION_KEYS}
        | {name for p in PROFILES.values() for name in p.key_envs}
        | {p.base_url_env for p in PROFILES.values() if p.base_url_env}
    )
)

_PLACEHOLDER = re.compile(r"@[A-Z_]+@")
_UNSAFE_IN_UNIT = re.compile(r"[\s\"'\\$;]|[\x00-\x1f\x7f]")
_ACCOUNT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ENV_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def template_text(name: str) -> str:
    """A file of `live_memory/deploy_templates/`, read through the package (works in any kind of install)."""
    try:
        return resources.files(TEMPLATE_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"the deployment template {name} is missing from this installation of live_memory "
            "(it must be shipped as package data; reinstall the package)"
        ) from None


def _unit_path(value: Path | str, what: str) -> str:
    """An absolute path made safe for a unit file line (systemd specifiers escaped)."""
    text = str(value)
    if not Path(text).is_absolute():
        raise ConfigError(f"{what} must be an absolute path, got {text!r}")
    if _UNSAFE_IN_UNIT.search(text):
        raise ConfigError(
            f"{what} {text!r} contains whitespace, a quote, a backslash, ';' or '$', which a systemd unit "
            "would mis-parse; choose a path without them"
        )
    return text.replace("%", "%%")


def _strip_header(template: str) -> str:
    """Drop the template's leading comment block (it explains the placeholders, which are filled in now)."""
    lines = template.splitlines(keepends=True)
    index = 0
    while index < len(lines) and lines[index].startswith("#"):
        index += 1
    return "".join(lines[index:]).lstrip("\n")


def render_unit(
    mode: Mode,
    executable: Path,
    env_file: Path,
    *,
    data_dir: Path | None = None,
    user: str | None = None,
    python: Path | None = None,
) -> str:
    """The unit file text for `mode`, from the packaged template. Pure: reads nothing but the template.

    `python` (the interpreter that runs the readiness check) defaults to the python beside `executable` (a venv's
    bin/). A user unit defaults its data dir to `%h/.local/share/live-memory`; a system unit needs `user` (the
    account it runs as) and `data_dir` (that account's data dir), because in a system unit `%h` means /root.
    """
    if mode not in UNIT_TEMPLATES:
        raise ConfigError(f"mode must be 'user' or 'system', got {mode!r}")
    values = {
        "@EXECUTABLE@": _unit_path(executable, "the live-memory executable"),
        "@PYTHON@": _unit_path(python if python is not None else executable.parent / "python", "the python"),
        "@ENV_FILE@": _unit_path(env_file, "the environment file"),
    }
    if data_dir is not None:
        values["@DATA_DIR@"] = _unit_path(data_dir, "the data dir")
    elif mode == "user":
        values["@DATA_DIR@"] = USER_DATA_DIR_SPECIFIER
    else:
        raise ConfigError("a system unit needs data_dir: the data dir of the account it runs as")
    if mode == "system":
        if not user:
            raise ConfigError("a system unit needs user: the account it runs as (it reads that account's repositories)")
        if not _ACCOUNT.fullmatch(user):
            raise ConfigError(f"invalid account name {user!r}")
        values["@USER@"] = user
    elif user is not None:
        raise ConfigError("a user unit always runs as the user whose manager runs it; `user` applies to system units")
    flag = " --user" if mode == "user" else ""
    text = (
        f"# Generated by `live-memory install-service --{mode}` from the live_memory package's template\n"
        f"# deploy_templates/{UNIT_TEMPLATES[mode]}. Re-run that command to regenerate it; put local changes in a\n"
        f"# drop-in (`systemctl{flag} edit live-memory`) so they survive. See docs/operations.md.\n\n"
    ) + _strip_header(template_text(UNIT_TEMPLATES[mode]))
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    leftover = sorted(set(_PLACEHOLDER.findall(text)))
    if leftover:
        raise ConfigError(f"the {UNIT_TEMPLATES[mode]} template has unfilled placeholders: {', '.join(leftover)}")
    return text


def read_env_file(path: Path) -> dict[str, str]:
    """The KEY=value assignments of an environment file (comments and blank lines skipped); {} when absent."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the environment file {path}: {exc}") from None
    values: dict[str, str] = {}
    for line in lines:
        if line.lstrip().startswith(("#", ";")):
            continue
        match = _ENV_ASSIGNMENT.match(line)
        if match:
            raw = match.group(2)
            if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
                raw = raw[1:-1]
            values[match.group(1)] = raw
    return values


def python_for(executable: Path) -> Path:
    """The interpreter of a `live-memory` console script: its shebang, else the python beside it, else ours."""
    try:
        with executable.resolve().open("rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        first = ""
    if first.startswith("#!"):
        candidate = Path(first[2:].strip().split(" ")[0])
        if candidate.is_absolute() and candidate.name.startswith("python") and candidate.exists():
            return candidate
    beside = executable.resolve().parent / "python"
    return beside if beside.exists() else Path(sys.executable)


def current_executable() -> Path:
    """The `live-memory` command this process was started as (for `live-memory install-service`)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = [argv0 if argv0 is not None and argv0.name == "live-memory" else None]
    candidates.append(Path(sys.executable).parent / "live-memory")
    found = shutil.which("live-memory")
    candidates.append(Path(found) if found else None)
    for candidate in candidates:
        if candidate is not None and candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    raise ConfigError("cannot find the `live-memory` executable; install the package into a venv and run it from there")


def _account(mode: Mode, user: str | None, env: Mapping[str, str]) -> pwd.struct_passwd:
    """Who the service runs as: you (user mode); `user`, else the sudo caller, else you (system mode)."""
    if mode == "user":
        return pwd.getpwuid(os.getuid())
    name = user or env.get("SUDO_USER") or pwd.getpwuid(os.getuid()).pw_name
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise ConfigError(f"no such account: {name!r}") from None


def default_unit_dir(mode: Mode, env: Mapping[str, str] | None = None) -> Path:
    """Where systemd looks for units of `mode` (~/.config/systemd/user or /etc/systemd/system)."""
    if mode == "system":
        return SYSTEM_UNIT_DIR
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir)
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"


def hidden_by_private_tmp(path: Path) -> bool:
    """True when `path` (as written, or with symlinks resolved) lies under a directory PrivateTmp=yes replaces."""
    for candidate in {Path(os.path.abspath(path)), path.resolve()}:
        if any(candidate == tmp or tmp in candidate.parents for tmp in PRIVATE_TMP_DIRS):
            return True
    return False


def _private_tmp_problems(named: Mapping[str, Path]) -> list[str]:
    return [f"{what} {path}" for what, path in named.items() if hidden_by_private_tmp(path)]


@dataclass(frozen=True)
class InstallPlan:
    """What `install_service` would write, computed without writing anything (`--print` shows `unit_text`)."""

    mode: Mode
    unit_path: Path
    unit_text: str
    env_file: Path
    data_dir: Path
    user: str  # the account the service runs as
    home: Path  # that account's home
    python: Path
    warnings: tuple[str, ...] = ()  # accepted with force=True: what will not work as installed


def plan_install(
    mode: Mode,
    *,
    executable: Path,
    unit_dir: Path | None = None,
    env_file: Path | None = None,
    data_dir: Path | None = None,
    user: str | None = None,
    environ: Mapping[str, str] | None = None,
    force: bool = False,
) -> InstallPlan:
    """Resolve every path of an install. Data dir: `data_dir`, else LIVE_MEMORY_DATA_DIR in the env file, else
    the default the `live-memory` CLI would use (user mode) or the run-as account's ~/.local/share/live-memory.

    Raises ConfigError when the executable, its python or the data dir lies under /tmp or /var/tmp, which the
    unit's PrivateTmp=yes hides from the service; with `force` that becomes a warning in the plan."""
    env = os.environ if environ is None else environ
    if mode not in UNIT_TEMPLATES:
        raise ConfigError(f"mode must be 'user' or 'system', got {mode!r}")
    if not executable.is_absolute():
        executable = executable.absolute()
    if not executable.is_file():
        raise ConfigError(f"{executable} does not exist; pass the live-memory executable of the venv to run")
    if mode == "user" and user is not None:
        raise ConfigError("a user unit runs as the user whose manager runs it; choosing the account needs --system")
    account = _account(mode, user, env)
    home = Path(env.get("HOME") or account.pw_dir) if mode == "user" else Path(account.pw_dir)
    unit_dir = unit_dir or default_unit_dir(mode, env)
    if mode == "user":
        env_file = env_file or Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "live-memory" / "live-memory.env"
    else:
        env_file = env_file or SYSTEM_ENV_FILE
    if data_dir is None:
        from_file = read_env_file(env_file).get("LIVE_MEMORY_DATA_DIR", "")
        if from_file:
            data_dir = home / from_file[2:] if from_file.startswith("~/") else Path(from_file)
        elif mode == "user":
            data_dir = default_data_dir({k: v for k, v in env.items() if k != "CLAUDE_PLUGIN_DATA"})
        else:
            data_dir = home / ".local" / "share" / "live-memory"
    data_dir = Path(os.path.abspath(data_dir))
    python = python_for(executable)
    hidden = _private_tmp_problems({"the executable": executable, "its python": python, "the data dir": data_dir})
    warnings: tuple[str, ...] = ()
    if hidden:
        problem = (
            f"{'; '.join(hidden)} lies under /tmp or /var/tmp, which the unit's PrivateTmp=yes replaces with an "
            "empty directory: the service would not start (or would lose its data)"
        )
        if not force:
            raise ConfigError(
                f"{problem}. Install the package into a venv outside /tmp (e.g. ~/.local/opt/live-memory) and run "
                "install-service from there, or pass --force to install anyway"
            )
        warnings = (problem,)
    text = render_unit(
        mode,
        executable,
        env_file,
        data_dir=data_dir,
        user=account.pw_name if mode == "system" else None,
        python=python,
    )
    return InstallPlan(mode, unit_dir / UNIT_NAME, text, env_file, data_dir, account.pw_name, home, python, warnings)


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int  # -1: could not run or timed out
    output: str


@dataclass(frozen=True)
class InstallReport:
    """What `install_service` did; `str(report)` is the text the CLI prints."""

    plan: InstallPlan
    env_file_created: bool
    data_dir_created: bool
    commands: tuple[CommandResult, ...]
    todo: tuple[str, ...]  # shell commands still to run, in order
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(c.returncode == 0 for c in self.commands)

    def lines(self) -> list[str]:
        plan = self.plan
        env_state = (
            "created from the example (0600): fill in a provider credential"
            if self.env_file_created
            else "kept as it was"
        )
        out = [
            f"wrote {plan.unit_path} ({plan.mode} unit, runs as {plan.user})",
            f"environment file {plan.env_file}: {env_state}",
            f"data dir {plan.data_dir}: {'created (0700)' if self.data_dir_created else 'exists'}",
        ]
        for command in self.commands:
            status = "ok" if command.returncode == 0 else f"FAILED ({command.returncode})"
            out.append(f"ran `{shlex.join(command.argv)}`: {status}")
            out.extend(f"    {line}" for line in command.output.strip().splitlines()[-10:] if command.returncode != 0)
        if self.todo:
            out.append("still to run:")
            out.extend(f"    {command}" for command in self.todo)
        out.extend(f"note: {note}" for note in self.notes)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _write_unit(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"), mode=0o644)  # a unit file is read by the service manager


def _create_env_file(path: Path, text: str) -> bool:
    """Write `text` to `path` with mode 0600 unless the file exists. True when it was created."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # exact, whatever the umask
        handle.write(text)
    return True


def _make_data_dir(path: Path, account: pwd.struct_passwd | None) -> bool:
    """Create `path` (0700) and any missing parents; as root, hand each created directory to `account`."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"the data dir {path} exists but is not a directory")
    created = make_private_dirs(path)
    if account is not None:
        for directory in created:
            os.chown(directory, account.pw_uid, account.pw_gid)
    return bool(created)


def _run(argv: Sequence[str]) -> CommandResult:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), -1, f"timed out after {SYSTEMCTL_TIMEOUT_S:.0f} s")
    except OSError as exc:
        return CommandResult(tuple(argv), -1, str(exc))
    return CommandResult(tuple(argv), done.returncode, (done.stdout or "") + (done.stderr or ""))


def _unseen_provider_variables(plan: InstallPlan, env: Mapping[str, str]) -> list[str]:
    """Provider variables set for the installing shell or in Claude Code's settings but absent from the env file."""
    in_file = set(read_env_file(plan.env_file))
    seen = {name for name in PROVIDER_ENV if env.get(name)}
    settings = Path(env.get("CLAUDE_CONFIG_DIR") or plan.home / ".claude")
    try:
        claude_env = json.loads((settings / "settings.json").read_text(encoding="utf-8")).get("env", {})
    except (OSError, ValueError, AttributeError):
        claude_env = {}
    if isinstance(claude_env, dict):
        seen |= {name for name in PROVIDER_ENV if claude_env.get(name)}
    return sorted(seen - in_file)


def install_service(
    mode: Mode,
    *,
    executable: Path,
    unit_dir: Path | None = None,
    env_file: Path | None = None,
    enable: bool = True,
    systemctl: Sequence[str] = ("systemctl",),
    data_dir: Path | None = None,
    user: str | None = None,
    environ: Mapping[str, str] | None = None,
    force: bool = False,
) -> InstallReport:
    """Write the unit and (if absent) the env file, create the data dir, then reload and enable the unit.

    systemctl is skipped when `enable` is False or the command is not found; the report then lists what to run.
    Raises ConfigError for an unusable path or account and for a directory it may not write (e.g. /etc as a
    non-root user).
    """
    env = os.environ if environ is None else environ
    plan = plan_install(
        mode,
        executable=executable,
        unit_dir=unit_dir,
        env_file=env_file,
        data_dir=data_dir,
        user=user,
        environ=env,
        force=force,
    )
    account = _account(mode, plan.user, env) if mode == "system" and os.geteuid() == 0 else None
    try:
        _write_unit(plan.unit_path, plan.unit_text)
        env_created = _create_env_file(plan.env_file, template_text(ENV_TEMPLATE))
        data_created = _make_data_dir(plan.data_dir, account)
    except PermissionError as exc:
        hint = " (a system unit needs root: run it with sudo)" if mode == "system" else ""
        raise ConfigError(f"cannot write {exc.filename}: permission denied{hint}") from None

    scope = ["--user"] if mode == "user" else []
    steps = [[*scope, "daemon-reload"], [*scope, "enable", "--now", UNIT_NAME]]
    shown = [shlex.join(["systemctl", *step]) for step in steps]
    commands: list[CommandResult] = []
    todo: list[str] = []
    notes: list[str] = [f"installed anyway (--force): {warning}" for warning in plan.warnings]
    binary = shutil.which(systemctl[0]) if systemctl else None
    if not enable:
        todo = shown
    elif binary is None:
        todo = shown
        notes.append(f"{systemctl[0] if systemctl else 'systemctl'} not found: is this a systemd machine?")
    else:
        for index, step in enumerate(steps):
            result = _run([binary, *systemctl[1:], *step])
            commands.append(result)
            if result.returncode != 0:
                todo = shown[index:]
                break
    if mode == "user" and any("Failed to connect to bus" in c.output for c in commands):
        notes.append(
            "systemctl --user found no user manager (a shell from su/sudo, or ssh without a login session?): "
            f"run the commands from a normal login, or enable lingering first (loginctl enable-linger {plan.user})"
        )
    if plan.unit_path.parent != default_unit_dir(mode, env):
        notes.append(
            f"{plan.unit_path.parent} is not where systemd looks for {mode} units; link or copy the unit there"
        )
    unseen = _unseen_provider_variables(plan, env)
    if unseen:
        notes.append(
            f"set for you but not in {plan.env_file}, so the service will not see them: {', '.join(unseen)} "
            "(add them there, then restart the service)"
        )
    if mode == "user" and env.get("SUDO_USER") and os.geteuid() == 0:
        notes.append("this installed a user unit for root; run it without sudo for your own user, or use --system")
    if mode == "user" and not (LINGER_DIR / plan.user).exists():
        notes.append(f"it starts when you log in; to start it at boot instead: loginctl enable-linger {plan.user}")
    if mode == "system" and plan.user == "root":
        notes.append("the service runs as root; prefer --run-as <the account whose repositories it reads>")
    return InstallReport(plan, env_created, data_created, tuple(commands), tuple(todo), tuple(notes))
