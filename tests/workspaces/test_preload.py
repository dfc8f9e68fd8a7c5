"""Preload documents: configured globs expanded inside the workspace, jailed like the tools, read in a
deterministic order under a per-file and a total cap."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from live_memory.workspaces.preload import load_preload, read_preload
from tests.fakes.repo_builder import preload_repo


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return preload_repo(tmp_path)


def test_preload_is_deterministic_jailed_and_capped(workspace: Path) -> None:
    docs = read_preload(
        workspace,
        ["docs/intro.md", "docs/**/*.md", "../outside/*.md", "/etc/*"],
        max_file_bytes=1000,
        max_total_bytes=10_000,
        secret_globs=(".env",),
    )
    assert [d.path for d in docs] == ["docs/intro.md", "docs/api/auth.md"]  # big.md over the per-file cap, logo binary
    clamped = read_preload(workspace, ["docs/**/*.md"], max_file_bytes=10_000, max_total_bytes=40, secret_globs=())
    assert [d.path for d in clamped] == ["docs/api/auth.md"]  # earlier paths win until the total cap


def test_a_secret_file_matched_by_a_pattern_is_never_read(workspace: Path) -> None:
    docs = read_preload(workspace, ["docs/*"], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=(".env",))
    assert ".env" not in " ".join(d.path for d in docs) and "SECRET=1" not in " ".join(d.content for d in docs)
    assert [d.path for d in docs] == ["docs/intro.md"]


def test_a_symlink_leading_out_of_the_workspace_is_skipped(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("OUTSIDE-CONTENT\n")
    (workspace / "docs" / "escape.md").symlink_to(tmp_path / "outside.md")
    docs = read_preload(workspace, ["docs/*.md"], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=())
    assert "OUTSIDE-CONTENT" not in "".join(d.content for d in docs)
    assert [d.path for d in docs] == ["docs/intro.md"]


def test_a_file_matched_by_several_patterns_is_loaded_once_where_it_first_matched(workspace: Path) -> None:
    docs = read_preload(
        workspace, ["docs/api/*.md", "docs/**/*.md"], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=()
    )
    assert [d.path for d in docs] == ["docs/api/auth.md", "docs/intro.md"]


def test_a_link_to_a_document_already_loaded_does_not_load_it_twice(workspace: Path) -> None:
    (workspace / "docs" / "welcome.md").symlink_to("intro.md")
    docs = read_preload(workspace, ["docs/*.md"], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=())
    assert [d.path for d in docs] == ["docs/intro.md"]  # the link sorts after its target: the target's name wins


def test_a_document_keeps_the_hash_of_its_bytes_and_undecodable_bytes_are_replaced(workspace: Path) -> None:
    raw = "caf\u00e9 ".encode() + b"\xff\n"
    (workspace / "docs" / "latin.md").write_bytes(raw)
    [doc] = read_preload(workspace, ["docs/latin.md"], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=())
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()
    assert doc.content == "caf\u00e9 \ufffd\n"


@pytest.mark.parametrize("pattern", ["", "   ", "../repo/docs/*.md", "docs/../app.py", "/abs/*.md", "\\etc\\*"])
def test_patterns_that_could_leave_the_workspace_are_refused(workspace: Path, pattern: str) -> None:
    assert read_preload(workspace, [pattern], max_file_bytes=1000, max_total_bytes=10_000, secret_globs=()) == []


async def test_loading_from_async_code_gives_the_same_documents(workspace: Path) -> None:
    kwargs = {"max_file_bytes": 1000, "max_total_bytes": 10_000, "secret_globs": (".env",)}
    docs = await load_preload(workspace, ["docs/**/*.md"], **kwargs)  # type: ignore[arg-type]
    assert [d.path for d in docs] == ["docs/api/auth.md", "docs/intro.md"]
    assert docs[1].content == "# Intro\nWelcome.\n"
