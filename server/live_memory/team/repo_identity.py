"""Which repository a checkout is, the same on every machine: the key a team's knowledge is shared under.

The normalized URL of the `origin` remote (else the first remote), so `git@github.com:Org/App.git`,
`https://user:token@github.com/org/app` and `ssh://git@github.com/org/app/` are one repository, and no
credential in a URL ever leaves the machine; a repository without a remote is named by its root commit
(`root:<sha>`), which every clone shares. None outside git, or for a repository with no commit yet.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from live_memory.constants import REPO_IDENTITY_TIMEOUT_S
from live_memory.fs.subproc import child_env, run_bounded

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")  # git@host:org/repo.git
_GIT_OUTPUT_BYTES = 64 * 1024


def normalize_remote(url: str) -> str | None:
    """`host/path` in lower case, without scheme, user, password, port, `.git` or slashes at the ends."""
    url = url.strip()
    if not url:
        return None
    scp = _SCP_LIKE.match(url) if "://" not in url else None
    if scp is not None:
        host, path = scp.group("host"), scp.group("path")
    elif "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file" or not parts.hostname:
            path = parts.path
            host = ""
        else:
            host, path = parts.hostname, parts.path
    else:  # a local path used as a remote: only the name is the same across machines
        host, path = "", Path(url).name
    path = path.strip("/").removesuffix(".git").strip("/")
    if not path:
        return None
    return f"{host}/{path}".lower().lstrip("/")


async def repository_identity(root: Path, timeout_s: float = REPO_IDENTITY_TIMEOUT_S) -> str | None:
    """The identity of the repository at `root` (see the module's doc); None when git cannot tell."""
    remotes = await _git(root, timeout_s, "config", "--get-regexp", r"^remote\..*\.url$")
    urls = dict(line.split(" ", 1) for line in remotes.splitlines() if " " in line)
    for key in ("remote.origin.url", *sorted(urls)):
        normalized = normalize_remote(urls.get(key, ""))
        if normalized:
            return normalized
    roots = (await _git(root, timeout_s, "rev-list", "--max-parents=0", "HEAD")).split()
    return f"root:{sorted(roots)[0]}" if roots else None


async def _git(root: Path, timeout_s: float, *args: str) -> str:
    try:
        result = await run_bounded(
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=root,
            timeout_s=timeout_s,
            max_bytes=_GIT_OUTPUT_BYTES,
            env=child_env(),
        )
    except OSError:
        return ""
    return result.stdout.decode("utf-8", "replace") if result.returncode == 0 else ""
