"""The path jail: a table of hostile inputs, each refused with a clear message by the resolver and by
every tool, with no planted byte from outside the workspace, .git or a secret file ever returned."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from live_memory.constants import DEFAULT_SECRET_GLOBS
from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import CLEAR_DIRS_CACHE_SIZE, Jail, SecretMatcher
from live_memory.tools import Toolbox
from tests.fakes.repo_builder import (
    GITCONFIG_MARKER,
    HISTORY_SECRET_MARKER,
    OUTSIDE_MARKER,
    RENAMED_SECRET_MARKER,
    SECRET_MARKER,
    HistoryRepo,
)

LEAK_MARKERS = (SECRET_MARKER, OUTSIDE_MARKER, GITCONFIG_MARKER, HISTORY_SECRET_MARKER, RENAMED_SECRET_MARKER)
ETC_PASSWD_SIGNS = ("root:x:0:0", "/bin/bash", "/usr/sbin/nologin")

OUTSIDE = "outside the workspace"
DOTDOT = "'..' is not allowed"
SYMLINK = "resolves outside the workspace"
GIT = ".git"
SECRET = "withheld"

# (hostile path, fragment the refusal message must contain). "{root}" and "{outside}" are filled in.
HOSTILE_PATHS: list[tuple[str, str]] = [
    # absolute paths outside the workspace
    ("/etc/passwd", OUTSIDE),
    ("/etc", OUTSIDE),
    ("/", OUTSIDE),
    ("/proc/self/root/etc/passwd", OUTSIDE),
    ("/proc/self/environ", OUTSIDE),
    ("{outside}/passwd", OUTSIDE),
    ("{outside}", OUTSIDE),
    ("{root}_sibling/passwd", OUTSIDE),  # the root's name as a prefix of another directory's
    ("{root}/../outside/passwd", DOTDOT),
    ("//etc//passwd", OUTSIDE),
    # ".." in every position
    ("..", DOTDOT),
    ("../", DOTDOT),
    ("../outside/passwd", DOTDOT),
    ("./../outside/passwd", DOTDOT),
    ("src/../../outside/passwd", DOTDOT),
    ("src/app/../../../outside/passwd", DOTDOT),
    ("a/b/c/../../../../etc/passwd", DOTDOT),
    ("src/..", DOTDOT),
    ("src/app/..", DOTDOT),
    ("..\\..\\etc\\passwd", DOTDOT),
    ("src\\..\\..\\outside\\passwd", DOTDOT),
    ("src/app/main.py/../../../../outside", DOTDOT),
    # symbolic links whose real target is outside
    ("escape_file", SYMLINK),
    ("escape_dir", SYMLINK),
    ("escape_dir/passwd", SYMLINK),
    ("chain_a", SYMLINK),
    ("chain_b", SYMLINK),
    ("etc_link", SYMLINK),
    ("etc_link/passwd", SYMLINK),
    ("passwd_link", SYMLINK),
    ("proc_root", SYMLINK),
    ("proc_root/etc/passwd", SYMLINK),
    ("src/escape_sub", SYMLINK),
    ("src/escape_sub/passwd", SYMLINK),
    ("{root}/escape_file", SYMLINK),
    # NUL bytes and overlong names
    ("src/app/main.py\x00.txt", "NUL byte"),
    ("\x00", "NUL byte"),
    ("a" * 5000, "characters long"),
    ("x" * 300 + "/file.txt", "bytes long"),
    # home directories and Windows drives
    ("~/.ssh/id_rsa", "home-directory"),
    ("~root/.bashrc", "home-directory"),
    ("C:\\Windows\\win.ini", OUTSIDE),
    ("C:/Windows/System32", OUTSIDE),
    # git internals, directly and through links
    (".git", GIT),
    (".git/config", GIT),
    (".git/HEAD", GIT),
    ("./.git/objects", GIT),
    (".GIT/config", GIT),
    ("{root}/.git/config", GIT),
    ("to_git_config", GIT),
    ("to_git_dir/config", GIT),
    ("src/../.git/config", DOTDOT),
    # secret files, directly, by case, absolute, deleted and through a link
    (".env", SECRET),
    ("config/.env.production", SECRET),
    ("keys/server.pem", SECRET),
    ("KEYS/SERVER.PEM", SECRET),
    (".aws/credentials", SECRET),
    ("deploy/service-account-prod.json", SECRET),
    ("deploy/.env", SECRET),
    ("config/app.env", SECRET),
    ("{root}/.env", SECRET),
    ("alias_env", SECRET),
]


def _fill(template: str, repo: HistoryRepo) -> str:
    return template.replace("{root}", str(repo.root)).replace("{outside}", str(repo.outside))


def _ids() -> list[str]:
    return [repr(p)[:40] for p, _ in HOSTILE_PATHS]


def assert_no_leak(text: str) -> None:
    for marker in LEAK_MARKERS:
        assert marker not in text, f"leaked {marker!r}"
    for sign in ETC_PASSWD_SIGNS:
        assert sign not in text, f"leaked /etc/passwd content ({sign!r})"


def test_the_hostile_table_is_large_enough() -> None:
    assert len(HOSTILE_PATHS) >= 40


@pytest.mark.parametrize(("template", "fragment"), HOSTILE_PATHS, ids=_ids())
def test_hostile_path_is_refused_by_the_resolver_with_a_clear_message(
    history_repo: HistoryRepo, template: str, fragment: str
) -> None:
    jail = Jail(history_repo.root)
    with pytest.raises(JailRefusal) as refused:
        jail.resolve(_fill(template, history_repo), allow_dir=True)
    message = str(refused.value)
    assert fragment in message
    assert "\x00" not in message and len(message) < 400


@pytest.mark.parametrize(("template", "fragment"), HOSTILE_PATHS, ids=_ids())
async def test_hostile_path_is_refused_by_every_tool_without_leaking(
    history_repo: HistoryRepo, toolbox: Toolbox, template: str, fragment: str
) -> None:
    path = _fill(template, history_repo)
    calls: list[tuple[str, dict[str, object]]] = [
        ("Read", {"file_path": path}),
        ("Grep", {"pattern": ".", "path": path, "output_mode": "content"}),
        ("Glob", {"pattern": "**/*", "path": path}),
        ("find_paths", {"path": path}),
        ("get_changed_files", {"path": path}),
        ("git_search", {"path": path, "include_patch": True}),
    ]
    for name, arguments in calls:
        outcome = await toolbox.run(name, arguments)
        assert outcome.is_error, f"{name} accepted {path!r}: {outcome.text[:200]}"
        assert fragment in outcome.text, f"{name}: {outcome.text}"
        assert outcome.files_read == ()
        assert_no_leak(outcome.text)


HOSTILE_GLOBS = [
    "../*",
    "../**/*",
    "../outside/*",
    "**/../../outside/*",
    "src/../../*",
    "..\\*",
    "/etc/*",
    "/etc/passwd",
    "/proc/self/root/*",
    "/*",
    "~/*",
    "C:\\*",
    ".git/*",
    "**/.git/config",
    ".git/**",
]


@pytest.mark.parametrize("pattern", HOSTILE_GLOBS)
async def test_glob_pattern_walking_outside_or_into_git_is_refused(toolbox: Toolbox, pattern: str) -> None:
    outcome = await toolbox.run("Glob", {"pattern": pattern})
    assert outcome.is_error, outcome.text
    assert any(word in outcome.text for word in ("'..'", "outside the workspace", ".git")), outcome.text
    assert_no_leak(outcome.text)


@pytest.mark.parametrize("pattern", ["../*", "!../*", ".git/*", "..\\*", "**/.git/**", "~/*"])
async def test_grep_glob_filter_walking_outside_or_into_git_is_refused(toolbox: Toolbox, pattern: str) -> None:
    outcome = await toolbox.run("Grep", {"pattern": "root", "glob": pattern})
    assert outcome.is_error, outcome.text
    assert_no_leak(outcome.text)


async def test_broad_queries_never_return_planted_content(any_toolbox: Toolbox) -> None:
    markers = "|".join((*LEAK_MARKERS, "root:x:0", "needle"))
    calls: list[tuple[str, dict[str, object]]] = [
        ("Grep", {"pattern": markers, "output_mode": "content", "head_limit": 5000}),
        ("Grep", {"pattern": markers, "output_mode": "count"}),
        ("Grep", {"pattern": markers, "glob": "*.env*"}),
        ("Grep", {"pattern": markers, "glob": ".env", "output_mode": "content"}),
        ("Grep", {"pattern": "API_TOKEN|aws_secret|PRIVATE KEY", "output_mode": "content"}),
        ("Glob", {"pattern": "**/*"}),
        ("find_paths", {}),
        ("get_changed_files", {}),
        ("git_search", {"include_patch": True, "max_count": 50}),
        ("git_search", {"query": "env|deploy|settings", "include_patch": True}),
        ("git_search", {"path": "config/app-settings.txt", "include_patch": True}),
        ("git_search", {"path": "config", "include_patch": True}),
        ("git_search", {"path": "deploy", "include_patch": True}),
        ("Grep", {"pattern": "root", "glob": "/etc/*", "output_mode": "content"}),
    ]
    for name, arguments in calls:
        outcome = await any_toolbox.run(name, arguments)
        assert_no_leak(outcome.text)


async def test_reading_every_listed_file_never_returns_planted_content(toolbox: Toolbox) -> None:
    listing = await toolbox.run("Glob", {"pattern": "**/*", "limit": 5000})
    paths = [line.split(" [")[0] for line in listing.text.splitlines() if not line.startswith("[")]
    assert "src/app/main.py" in paths
    for path in paths:
        outcome = await toolbox.run("Read", {"file_path": path})
        assert_no_leak(outcome.text)


async def test_secret_files_are_listed_as_withheld_but_never_read(toolbox: Toolbox) -> None:
    listing = await toolbox.run("Glob", {"pattern": "**/*"})
    assert ".env [withheld: secret]" in listing.text
    assert "keys/server.pem [withheld: secret]" in listing.text
    read = await toolbox.run("Read", {"file_path": ".env"})
    assert read.is_error and "secret" in read.text


# -- allowed paths --------------------------------------------------------------------------------
BENIGN_PATHS = ["src/app/main.py", "src/app", "src", "ok_link.py", "src/not_there.py", "src/app/main.py/x", ""]


def test_a_batch_jail_refuses_the_whole_hostile_table_after_resolving_benign_paths(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root, remember_dirs=True)  # one jail for the whole table, as for one request
    for path in BENIGN_PATHS:
        jail.resolve(path, allow_dir=True)
    for template, fragment in HOSTILE_PATHS:
        with pytest.raises(JailRefusal) as refused:
            jail.resolve(_fill(template, history_repo), allow_dir=True)
        assert fragment in str(refused.value), template


def test_a_batch_jail_resolves_every_path_as_a_plain_jail_does(history_repo: HistoryRepo) -> None:
    plain, batch = Jail(history_repo.root), Jail(history_repo.root, remember_dirs=True)

    def verdict(jail: Jail, path: str, allow_dir: bool) -> str:
        try:
            return str(jail.resolve(path, allow_dir=allow_dir))
        except JailRefusal as exc:
            return f"refused: {exc}"

    for allow_dir in (True, False):
        for path in [*BENIGN_PATHS, *(_fill(t, history_repo) for t, _ in HOSTILE_PATHS), *BENIGN_PATHS]:
            assert verdict(batch, path, allow_dir) == verdict(plain, path, allow_dir), path


def test_a_directory_swapped_for_an_escaping_link_is_refused_by_the_next_batch(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "src" / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "src" / "sub" / "a.py").write_text("a = 1\n")
    first = Jail(root, remember_dirs=True)
    first.check_relative("src/sub/a.py")
    (root / "src" / "sub" / "a.py").unlink()
    (root / "src" / "sub").rmdir()
    (root / "src" / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(JailRefusal, match="resolves outside the workspace"):
        Jail(root, remember_dirs=True).check_relative("src/sub/a.py")


def test_check_relative_gives_the_verdict_of_resolve_relative(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    jail.check_relative("src/app/main.py")
    jail.check_relative("src", allow_dir=True)
    for rel, fragment in [("passwd_link", SYMLINK), ("src", "is a directory"), ("escape_dir/passwd", SYMLINK)]:
        with pytest.raises(JailRefusal, match=fragment):
            jail.check_relative(rel)


@pytest.mark.parametrize(
    "template",
    [
        "src/app/main.py",
        "./src//app/main.py",
        "src\\app\\main.py",
        "{root}/src/app/main.py",
        "{root}//src/./app//main.py",
        " src/app/main.py ",
    ],
)
def test_plain_and_absolute_inside_paths_resolve_to_the_real_file(history_repo: HistoryRepo, template: str) -> None:
    jail = Jail(history_repo.root)
    assert jail.resolve(_fill(template, history_repo)) == history_repo.root / "src/app/main.py"


def test_symlink_inside_the_workspace_resolves_to_its_target(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    assert jail.relative(jail.resolve("ok_link.py")) == "src/app/main.py"


def test_a_normalized_path_resolves_like_the_original_and_a_link_out_is_still_refused(
    history_repo: HistoryRepo,
) -> None:
    jail = Jail(history_repo.root)
    rel = jail.normalize(f"{history_repo.root}/src//app/./main.py")
    assert jail.resolve_relative(rel) == jail.resolve("src/app/main.py") == history_repo.root / "src/app/main.py"
    assert jail.relative(jail.resolve_relative("ok_link.py")) == "src/app/main.py"
    with pytest.raises(JailRefusal, match="resolves outside the workspace"):
        jail.resolve_relative("passwd_link")


def test_missing_path_inside_the_workspace_resolves_for_the_caller_to_report(
    history_repo: HistoryRepo,
) -> None:
    jail = Jail(history_repo.root)
    assert jail.resolve("src/not_there.py") == history_repo.root / "src/not_there.py"


def test_root_resolves_only_when_directories_are_allowed(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    assert jail.resolve("", allow_dir=True) == history_repo.root
    assert jail.resolve(".", allow_dir=True) == history_repo.root
    assert jail.resolve(f"{history_repo.root}/", allow_dir=True) == history_repo.root
    assert jail.resolve(f"{history_repo.root}/.", allow_dir=True) == history_repo.root
    with pytest.raises(JailRefusal, match="is a directory"):
        jail.resolve("src")


def test_relative_refuses_a_path_outside_the_root(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    assert jail.relative(history_repo.root) == "."
    with pytest.raises(JailRefusal):
        jail.relative(history_repo.outside / "passwd")


def test_relative_root_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        Jail(Path("relative/dir"))


# -- secret guard ---------------------------------------------------------------------------------
SECRET_CASES = [
    (".env", True),
    (".env.local", True),
    (".env.example", True),  # templates are withheld too by default; secret_globs can change that
    ("config/prod.env", True),
    ("a/b/.ENV", True),
    ("server.PEM", True),
    ("tls/server.key", True),
    ("home/.ssh/id_rsa", True),
    ("id_rsa.pub", True),
    ("id_ed25519", True),
    (".netrc", True),
    (".npmrc", True),
    (".pypirc", True),
    ("cert.p12", True),
    ("cert.pfx", True),
    ("app.keystore", True),
    ("credentials.json", True),
    ("gcp/service-account-ci.json", True),
    (".aws/credentials", True),
    ("home/.aws/credentials", True),
    (".docker/config.json", True),
    ("venv/.env/lib/site.py", True),  # a directory named like a secret withholds what is inside
    ("environment.py", False),
    ("src/keys.py", False),
    ("docs/credentials.md", False),
    ("aws/credentials", False),
    ("docker/config.json", False),
    ("src/app/main.py", False),
    ("keystore.md", False),
    ("home/.aws/config", False),  # the same directories as secret paths, checked in turn with them
    ("home/.ssh/known_hosts", False),
    ("venv/lib/site.py", False),
    ("venv/.env/lib/other.py", True),
    ("a/b/c.py", False),
    ("a/b", False),
]


@pytest.mark.parametrize(("path", "secret"), SECRET_CASES)
def test_secret_guard_matches_credential_files_only(history_repo: HistoryRepo, path: str, secret: bool) -> None:
    assert Jail(history_repo.root).is_secret(path) is secret


def test_secret_guard_gives_each_path_its_verdict_whatever_was_checked_before() -> None:
    matcher = SecretMatcher(DEFAULT_SECRET_GLOBS)
    for cases in (SECRET_CASES, SECRET_CASES[::-1], SECRET_CASES):
        assert [(p, matcher.matches(p)) for p, _ in cases] == cases
    for n in range(CLEAR_DIRS_CACHE_SIZE + 10):  # more directories than it remembers
        assert not matcher.matches(f"pkg{n}/mod.py")
    assert [(p, matcher.matches(p)) for p, _ in SECRET_CASES] == SECRET_CASES


def test_secret_globs_are_configurable(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root, secret_globs=("*.md", "/src/app/main.py"))
    assert not jail.is_secret(".env")
    assert jail.is_secret("docs/guide.md")
    assert jail.is_secret("src/app/main.py")
    assert not jail.is_secret("other/src/app/main.py")
    assert jail.resolve(".env") == history_repo.root / ".env"
    with pytest.raises(JailRefusal, match="withheld"):
        jail.resolve("README.md")


def test_default_secret_globs_cover_the_documented_credentials() -> None:
    for glob in (
        ".env",
        ".env.*",
        "*.pem",
        "*.key",
        "id_rsa*",
        "id_ed25519*",
        "id_ecdsa*",
        ".netrc",
        ".npmrc",
    ):
        assert glob in DEFAULT_SECRET_GLOBS
    for glob in (".pypirc", "*.p12", "*.pfx", "*.keystore", "credentials.json", ".aws/credentials"):
        assert glob in DEFAULT_SECRET_GLOBS
    assert ".docker/config.json" in DEFAULT_SECRET_GLOBS
    assert "service-account*.json" in DEFAULT_SECRET_GLOBS


# -- opening --------------------------------------------------------------------------------------
def test_regular_text_file_is_readable_text(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    assert jail.is_readable_text(history_repo.root / "src/app/main.py")


@pytest.mark.parametrize("rel", ["assets/logo.png", "pipe.fifo", "src"])
def test_binary_fifo_and_directory_are_not_readable_text(history_repo: HistoryRepo, rel: str) -> None:
    assert not Jail(history_repo.root).is_readable_text(history_repo.root / rel)


def test_fifo_is_refused_without_blocking(history_repo: HistoryRepo) -> None:
    jail = Jail(history_repo.root)
    with pytest.raises(JailRefusal, match="FIFO"):
        jail.open_text(jail.resolve("pipe.fifo"))


def test_device_file_is_refused(tmp_path: Path) -> None:
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs CAP_MKNOD")
    jail = Jail(tmp_path)
    assert not jail.is_readable_text(device)
    with pytest.raises(JailRefusal, match="device"):
        jail.open_text(jail.resolve("null"))


def test_outside_device_is_not_readable_text(history_repo: HistoryRepo) -> None:
    assert not Jail(history_repo.root).is_readable_text(Path("/dev/zero"))


def test_file_swapped_for_an_escaping_symlink_after_resolving_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text(OUTSIDE_MARKER)
    target = tmp_path / "ws" / "notes.txt"
    target.write_text("harmless\n")
    jail = Jail(tmp_path / "ws")
    resolved = jail.resolve("notes.txt")
    target.unlink()
    target.symlink_to(tmp_path / "secret.txt")  # the race: swapped between resolve and open
    with pytest.raises(JailRefusal, match="symbolic link"):
        jail.open_text(resolved)


def test_symlinked_workspace_root_is_resolved_and_its_spelling_accepted(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "a.py").write_text("x = 1\n")
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    jail = Jail(alias)
    assert jail.root == real
    assert jail.resolve(str(alias / "src/a.py")) == real / "src/a.py"
    assert jail.resolve(str(real / "src/a.py")) == real / "src/a.py"


def test_a_directory_swapped_for_a_link_after_resolving_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "notes.txt").write_text(OUTSIDE_MARKER)
    (tmp_path / "ws" / "sub" / "notes.txt").write_text("harmless\n")
    jail = Jail(tmp_path / "ws")
    resolved = jail.resolve("sub/notes.txt")
    (tmp_path / "ws" / "sub").rename(tmp_path / "sub-away")
    (tmp_path / "ws" / "sub").symlink_to(tmp_path / "outside")  # the race: a directory in the middle
    with pytest.raises(JailRefusal, match=r"symbolic link in its path \('sub'\)"):
        jail.open_text(resolved)
    with pytest.raises(JailRefusal, match="symbolic link"):
        jail.open_dir(jail.root / "sub")


def test_a_resolved_path_is_refused_when_it_is_secret_whatever_name_reached_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOKEN=x\n")
    jail = Jail(tmp_path)
    with pytest.raises(JailRefusal, match="withheld"):
        jail.open_text(tmp_path / ".env")
