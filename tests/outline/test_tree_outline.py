"""The stable prefix's tree and, in a small repository, the files' definitions up to the cache minimum:
scanned from a real temporary workspace."""

from __future__ import annotations

from pathlib import Path

from live_memory.constants import DEFAULT_SECRET_GLOBS, OUTLINE_NAMES_PER_FILE
from live_memory.core.prompts import OUTLINE_HEADING
from live_memory.outline.directory_tree import TreePolicy
from live_memory.outline.tree_outline import scan_tree
from tests.fakes.repo_builder import small_repo, wide_repo

SERVICE = '''\
"""The service."""

LIMIT = 3


class Service:
    def start(self) -> None: ...


def make_service() -> Service:
    return Service()


def _helper() -> None: ...
'''
FILES = {
    "src/service.py": SERVICE,
    "src/util.py": "def slugify(text):\n    return text\n",
    "src/constants.py": "LIMIT = 3\n",
    "README.md": "# Title\n\n## Usage\n",
    "web/app.ts": "export function render(): void {}\nexport class View {}\n",
}
HEAD_CHARS = 6_000  # tool schemas and instructions before the tree
FLOOR_TOKENS = 4_300


def policy(floor_tokens: int = FLOOR_TOKENS, secrets: tuple[str, ...] = DEFAULT_SECRET_GLOBS) -> TreePolicy:
    return TreePolicy(
        configured_tokens=2_000,
        cache_floor_tokens=floor_tokens,
        head_chars=HEAD_CHARS,
        max_share=0.1,
        secret_globs=secrets,
    )


async def scan(root: Path, tree_policy: TreePolicy) -> str:
    return (await scan_tree(root, tree_policy, budget_tokens=200_000, chars_per_token=4.0)).text


async def test_a_small_repository_lists_each_code_file_s_top_level_classes_and_functions(tmp_path: Path) -> None:
    text = await scan(small_repo(tmp_path, FILES), policy())
    tree, outline = text.split(f"\n\n{OUTLINE_HEADING}\n")
    assert tree.startswith("5 files") and "service.py" in tree
    # Path order; no constants, private names, methods, prose or data.
    assert outline.splitlines() == [
        "src/service.py: Service, make_service",
        "src/util.py: slugify",
        "web/app.ts: render, View",
    ]


async def test_the_outline_fills_the_head_up_to_the_cache_minimum_and_no_further(tmp_path: Path) -> None:
    files = {f"pkg/module_{i:03d}.py": f"def handler_{i}():\n    return {i}\n" for i in range(400)}
    root = small_repo(tmp_path, files)
    text = await scan(root, policy(floor_tokens=6_000))
    outline = text.split(OUTLINE_HEADING)[1]
    assert HEAD_CHARS + len(text) <= 6_000 * 4
    assert HEAD_CHARS + len(text) > 6_000 * 4 - 100  # filled: the next line would not have fit
    assert "pkg/module_000.py: handler_0" in outline and "pkg/module_399.py" not in outline
    assert await scan(root, policy(floor_tokens=6_000)) == text  # the same files give the same bytes


async def test_a_head_that_clears_the_minimum_without_it_gets_no_outline(tmp_path: Path) -> None:
    assert OUTLINE_HEADING not in await scan(small_repo(tmp_path, FILES), policy(floor_tokens=1_024))
    assert OUTLINE_HEADING not in await scan(wide_repo(tmp_path), policy())  # the tree fills the room itself


async def test_a_file_withheld_as_secret_is_never_outlined(tmp_path: Path) -> None:
    text = await scan(small_repo(tmp_path, FILES), policy(secrets=(*DEFAULT_SECRET_GLOBS, "util.py")))
    assert "slugify" not in text and "src/service.py: Service" in text


async def test_a_file_with_many_definitions_names_the_first_ones_and_counts_the_rest(tmp_path: Path) -> None:
    many = "".join(f"def step_{i:02d}():\n    pass\n" for i in range(OUTLINE_NAMES_PER_FILE + 3))
    text = await scan(small_repo(tmp_path, {"steps.py": many}), policy())
    shown = ", ".join(f"step_{i:02d}" for i in range(OUTLINE_NAMES_PER_FILE))
    assert f"steps.py: {shown} (+3 more)" in text


async def test_a_file_edited_since_the_last_scan_is_outlined_anew(tmp_path: Path) -> None:
    root = small_repo(tmp_path, FILES)
    assert "src/util.py: slugify\n" in await scan(root, policy())
    edited = "def slugify(text):\n    return text\n\n\ndef titlecase(text):\n    return text\n"
    (root / "src" / "util.py").write_text(edited)
    assert "src/util.py: slugify, titlecase\n" in await scan(root, policy())
