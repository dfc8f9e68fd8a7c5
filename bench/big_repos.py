"""Big repositories built from real sdists, side by side and committed into git (downloaded once, bench/.cache)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from bench.tools_bench import CACHE, _commit_all, _ensure_cache

SDISTS = {
    "django": "django==5.1.4",
    "sympy": "sympy==1.13.3",
    "sphinx": "sphinx==7.4.7",
    "ansible": "ansible==10.7.0",
}
SIZES = {"3k": ("sympy", "sphinx"), "15k": ("django", "sympy", "sphinx", "ansible"), "55k": tuple(SDISTS)}
MEDIUM_FILES = 15_000  # the 15k repository takes Ansible's collections in path order up to this many files


def sdist(name: str) -> Path:
    """The sdist's tree, downloaded with pip and unpacked once (bench/.cache/sdist-trees/<name>)."""
    _ensure_cache()
    tree = CACHE / "sdist-trees" / name
    if (tree / ".unpacked").exists():
        return tree
    requirement = SDISTS[name]
    archives = CACHE / "sdists"
    archives.mkdir(parents=True, exist_ok=True)
    stem = requirement.replace("==", "-")
    found = [p for p in archives.iterdir() if p.name.lower().startswith(stem.lower()) and p.suffix == ".gz"]
    if not found:
        print(f"downloading the {requirement} sdist with pip ...", flush=True)
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*argv, requirement, "-d", str(archives)], check=True, timeout=900)
        found = [p for p in archives.iterdir() if p.name.lower().startswith(stem.lower()) and p.suffix == ".gz"]
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    with tarfile.open(found[0]) as tar:
        tar.extractall(tree, filter="data")
    (tree / ".unpacked").write_text("ok\n")
    return tree


def _files_under(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file())


def big_repo(size: str) -> Path:
    """The `size` repository ("3k", "15k", "55k"): the sdists' trees side by side, committed into git."""
    repo = CACHE / f"big-{size}"
    if (repo / ".bench-ready").exists():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    total = 0
    for name in SIZES[size]:
        top = next(p for p in sdist(name).iterdir() if p.is_dir())
        if size == "15k" and name == "ansible":
            collections = top / "ansible_collections"
            for namespace in sorted(p for p in collections.iterdir() if p.is_dir()):
                for collection in sorted(p for p in namespace.iterdir() if p.is_dir()):
                    if total >= MEDIUM_FILES:
                        break
                    target = repo / "ansible" / "ansible_collections" / namespace.name / collection.name
                    shutil.copytree(collection, target)
                    total += _files_under(target)
            continue
        shutil.copytree(top, repo / name)
        total += _files_under(repo / name)
    print(f"committing the {size} repository ({total} files) into git ...", flush=True)
    _commit_all(repo)
    return repo


if __name__ == "__main__":
    for size in SIZES:
        print(size, big_repo(size))
