"""find_symbol through the toolbox's dispatch: a jailed workspace scan (ripgrep's rules, files outlined into cards),
or the same answer read from the checkout's symbol index once it is ready; short, capped output."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from live_memory.constants import (
    CARD_PARSE_MAX_BYTES,
    SYMBOL_CODE_MAX_DEFINITIONS,
    SYMBOL_MAX_DEFINITIONS,
    SYMBOL_MAX_USE_FILES,
    SYMBOL_NAME_MAX_CHARS,
    SYMBOL_SCAN_MAX_FILES,
)
from live_memory.outline.symbol_store import Stamp, SymbolStore, record_of
from live_memory.tools import TOOL_SCHEMAS, Toolbox, ToolLimits
from tests.fakes.indexed import indexed_toolbox
from tests.fakes.repo_builder import OUTSIDE_MARKER, SECRET_MARKER, RepoBuilder

_MODELS = "class Card:\n    def render(self) -> str:\n        return ''\n\n\ndef load(path):\n    return Card()\n"
_VIEWS = "from models import Card, load\n\n\ndef show(path):\n    return load(path).render()\n"


def _workspace(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def _text(box: Toolbox, **arguments: object) -> str:
    outcome = await box.run("find_symbol", arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text


async def test_a_name_is_answered_from_the_symbol_index_as_the_scan_answers_it(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", {"models.py": _MODELS, "views.py": _VIEWS})
    async with indexed_toolbox(root, tmp_path / "index.sqlite") as box:
        indexed = await _text(box, name="Card.render")
    assert indexed.splitlines() == [
        "Definitions of 'Card.render' (workspace scan; Read a range to see the code):",
        "models.py:2-3  Card.render (method)  def render(self) -> str",
        "Used in 1 file:",
        "views.py",
    ]
    assert indexed == await _text(await Toolbox.create(root), name="Card.render")


async def test_kind_asks_for_definitions_or_uses_only(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", {"models.py": _MODELS, "views.py": _VIEWS})
    box = await Toolbox.create(root)
    definitions = await _text(box, name="load", kind="definition")
    assert "models.py:6-7" in definitions and "Used in" not in definitions and "No file uses" not in definitions
    uses = await _text(box, name="Card", kind="uses")
    assert uses.splitlines() == ["Used in 2 files:", "models.py", "views.py"]


async def test_index_entries_outside_the_workspace_under_git_or_secret_are_never_shown(tmp_path: Path) -> None:
    source = "def planted():\n    pass\n"
    paths = ["../outside/evil.py", ".git/hooks/evil.py", ".env", "keys/server.pem"]
    root = _workspace(tmp_path / "ws", {"ok.py": source, **{p: source for p in paths[1:]}})
    _workspace(tmp_path / "outside", {"evil.py": source})

    def tamper() -> None:  # entries the build never makes, each as current as its file on disk
        store = SymbolStore.open(tmp_path / "index.sqlite", str(root))
        assert store is not None
        stamps = {path: Stamp.of(os.lstat(root / path)) for path in paths}
        store.put(record_of(path, stamp, source.encode()) for path, stamp in stamps.items())
        store.close()

    async with indexed_toolbox(root, tmp_path / "index.sqlite") as box:
        await asyncio.to_thread(tamper)
        text = await _text(box, name="planted", kind="definition")
    assert text.splitlines()[1:] == ["ok.py:1-2  planted (function)  def planted()"]


async def test_without_an_index_the_workspace_scan_gives_ranges_and_users(toolbox: Toolbox) -> None:
    assert (await _text(toolbox, name="retry")).splitlines() == [
        "Definitions of 'retry' (workspace scan; Read a range to see the code):",
        "src/app/helpers.py:1-5  retry (function)  def retry(fn, attempts=5)",
        "Used in 1 file:",
        "src/app/main.py",
    ]


async def test_the_scan_finds_qualified_names_module_constants_and_headings(toolbox: Toolbox) -> None:
    method = await _text(toolbox, name="RateLimiter.allow", kind="definition")
    assert method.splitlines()[1:] == ["src/app/main.py:10-11  RateLimiter.allow (method)  def allow(self) -> bool"]
    constant = await _text(toolbox, name="FEATURE", kind="definition")
    assert "src/app/feature.py:1  FEATURE (variable)  FEATURE = 'needle'" in constant
    heading = await _text(toolbox, name="Guide", kind="definition")
    assert "docs/guide.md:1-3  Guide (heading)  # Guide" in heading


async def test_a_word_of_a_heading_finds_its_section_and_its_lines_come_with_the_code_option(tmp_path: Path) -> None:
    guide = "# Guide\n\n## Deployment checklist\n\nRun the health check.\n\n## Later\n"
    root = _workspace(tmp_path / "ws", {"docs/ops.md": guide, "main.py": "print('hello')\n"})
    box = await Toolbox.create(root)
    text = await _text(box, name="Deployment", kind="definition", code=True)
    # One definition, its code shown: the code's heading is the whole answer's only naming of it.
    assert text.startswith("### docs/ops.md:3-5  Guide > Deployment checklist (heading)\n```\n3\t## Deployment")
    assert "5\tRun the health check." in text  # the section itself: no Read needed


def _wrappers(count: int) -> dict[str, str]:
    """`count` modules that each define their own `wrapper` (as Django's decorators do)."""
    return {f"deco/d{n}.py": f"def wrapper(view):\n    return 'view {n}'\n" for n in range(count)}


async def test_preferred_files_come_first_and_a_name_defined_everywhere_gets_their_code(tmp_path: Path) -> None:
    box = await Toolbox.create(_workspace(tmp_path / "ws", _wrappers(SYMBOL_CODE_MAX_DEFINITIONS + 3)))
    plain = await _text(box, name="wrapper", kind="definition", code=True)
    assert "```" not in plain  # defined in more places than code is shown for, and no file is preferred
    preferred = await _text(box, name="wrapper", kind="definition", code=True, prefer=["deco/d4.py", "gone.py"])
    located = [line.removeprefix("### ") for line in preferred.splitlines()]
    listed = [line.split(":")[0] for line in located if line.startswith("deco/")]
    assert listed == ["deco/d4.py", "deco/d0.py", "deco/d1.py", "deco/d2.py", "deco/d3.py"]
    assert "2\t    return 'view 4'" in preferred and "'view 0'" not in preferred  # only the preferred file's code
    # The shown definition is named once, in its code's heading (the code's first line is its signature); the
    # others are alternatives, listed by where and what they are.
    assert preferred.startswith("Definitions of 'wrapper' (workspace scan):\n")  # several: one list of them
    assert "### deco/d4.py:1-2  wrapper (function)\n```\n1\tdef wrapper(view):" in preferred
    assert "def wrapper(view)" not in preferred.replace("1\tdef wrapper(view):", "")
    assert "deco/d0.py:1-2  wrapper" in preferred.splitlines()


async def test_a_preferred_file_is_outlined_even_past_the_scan_s_file_limit(tmp_path: Path) -> None:
    last = f"deco/d{SYMBOL_SCAN_MAX_FILES + 4}.py"  # ripgrep lists it after the files the scan outlines
    box = await Toolbox.create(_workspace(tmp_path / "ws", _wrappers(SYMBOL_SCAN_MAX_FILES + 5)))
    assert last not in await _text(box, name="wrapper", kind="definition")
    text = await _text(box, name="wrapper", kind="definition", code=True, prefer=[last])
    assert text.splitlines()[1].startswith(f"### {last}:1-2") and f"'view {SYMBOL_SCAN_MAX_FILES + 4}'" in text


async def test_a_definition_inside_lines_the_caller_holds_comes_without_its_code(tmp_path: Path) -> None:
    box = await Toolbox.create(_workspace(tmp_path / "ws", {"models.py": _MODELS}))
    shown = await _text(box, name="load", kind="definition", code=True, held=["models.py:1-3"])
    assert "6\tdef load(path):" in shown  # the held lines are Card's, not load's
    held = await _text(box, name="load", kind="definition", code=True, held=["views.py:1-9", "models.py:5-7"])
    assert held.splitlines() == [
        "Definitions of 'load' (workspace scan):",  # no advice to read lines the caller holds
        "models.py:6-7  load (function)  [its lines are held in your context, as they are now]",
    ]
    refused = await box.run("find_symbol", {"name": "load", "code": True, "held": ["models.py:6"]})
    assert refused.is_error and "'held' takes path:first-last line ranges, got 'models.py:6'" in refused.text


async def test_a_preferred_file_that_defines_the_name_twice_shows_both(tmp_path: Path) -> None:
    decorator = "def {0}(view):\n    def wrapper():\n        return {1}\n"
    twice = decorator.format("cache", 1) + "\n\n" + decorator.format("vary", 2)
    files = {**_wrappers(SYMBOL_CODE_MAX_DEFINITIONS + 1), "deco/twice.py": twice}
    box = await Toolbox.create(_workspace(tmp_path / "ws", files))
    text = await _text(box, name="wrapper", kind="definition", code=True, prefer=["deco/twice.py", "deco/d0.py"])
    assert "### deco/twice.py:2-3" in text and "### deco/twice.py:7-8" in text and "### deco/d0.py:1-2" in text
    assert "'view 1'" not in text  # the files not preferred are listed by their lines only


async def test_the_scan_never_follows_links_out_of_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(f"def planted_outside():\n    return '{OUTSIDE_MARKER}'\n")
    root = _workspace(tmp_path / "ws", {"main.py": "print('hello')\n"})
    (root / "escape.py").symlink_to(outside / "evil.py")
    (root / "escape_dir").symlink_to(outside)
    (root / "relative.py").symlink_to("../outside/evil.py")
    box = await Toolbox.create(root)
    text = await _text(box, name="planted_outside")
    assert "No definition of 'planted_outside' found" in text
    assert OUTSIDE_MARKER not in text and "escape" not in text and "relative" not in text


async def test_the_scan_skips_secret_and_ignored_files(tmp_path: Path) -> None:
    hidden = f"def hidden_helper():\n    return '{SECRET_MARKER}'\n"
    root = _workspace(
        tmp_path / "ws",
        {".gitignore": "build/\n", ".env": hidden, "keys/server.pem": hidden, "build/gen.py": hidden},
    )
    text = await _text(await Toolbox.create(root), name="hidden_helper")
    assert "No definition" in text and "No file uses" in text
    assert SECRET_MARKER not in text and ".env" not in text and "build/" not in text


async def test_a_definition_in_a_file_too_large_to_outline_is_shown_as_its_line(tmp_path: Path) -> None:
    big = "# " + "x" * CARD_PARSE_MAX_BYTES + "\n\ndef huge_one():\n    return 1\n"
    root = _workspace(tmp_path / "ws", {"big.py": big})
    text = await _text(await Toolbox.create(root), name="huge_one", kind="definition")
    assert text.splitlines()[1:] == ["big.py:3  def huge_one():"]


async def test_definitions_and_users_are_capped_and_the_rest_counted(tmp_path: Path) -> None:
    extra_defs, extra_users = 1, 3  # every file within the scan's file cap, so each one is outlined
    assert SYMBOL_MAX_DEFINITIONS + extra_defs + SYMBOL_MAX_USE_FILES + extra_users <= SYMBOL_SCAN_MAX_FILES
    files = {f"def_{i:02d}.py": "def dup():\n    pass\n" for i in range(SYMBOL_MAX_DEFINITIONS + extra_defs)}
    files |= {f"use_{i:02d}.py": "dup()\n" for i in range(SYMBOL_MAX_USE_FILES + extra_users)}
    box = await Toolbox.create(_workspace(tmp_path / "ws", files))
    lines = (await _text(box, name="dup")).splitlines()
    assert sum(line.startswith("def_") for line in lines) == SYMBOL_MAX_DEFINITIONS
    assert f"[{extra_defs} more definitions not shown; ask for a qualified name]" in lines
    assert f"Used in {SYMBOL_MAX_USE_FILES + extra_users} files:" in lines
    assert sum(line.startswith("use_") for line in lines) == SYMBOL_MAX_USE_FILES
    assert f"[{extra_users} more files not shown; Grep with a path narrows it]" in lines


async def test_the_scan_reads_at_most_its_file_cap_and_says_how_many_it_left(tmp_path: Path) -> None:
    extra = 3
    files = {f"m{i:02d}.py": "from lib import thing\n\nthing()\n" for i in range(SYMBOL_SCAN_MAX_FILES + extra)}
    box = await Toolbox.create(_workspace(tmp_path / "ws", files))
    lines = (await _text(box, name="thing", kind="uses")).splitlines()
    assert f"Used in {SYMBOL_SCAN_MAX_FILES} files:" in lines
    assert f"[{extra} more files mention 'thing' but were not examined; Grep lists them all]" in lines


async def test_every_answer_respects_the_byte_cap(tmp_path: Path) -> None:
    files = {f"pkg/module_{i:02d}.py": "def dup():\n    pass\n\ndup()\n" for i in range(60)}
    box = await Toolbox.create(_workspace(tmp_path / "ws", files), ToolLimits(max_output_bytes=400))
    outcome = await box.run("find_symbol", {"name": "dup"})
    assert not outcome.is_error and len(outcome.text.encode()) <= 400
    assert "[output truncated at 400 bytes" in outcome.text


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "'name' is required"),
        ({"name": 3}, "'name' must be a string"),
        ({"name": "x", "kind": "all"}, "'kind' must be one of"),
        ({"name": "x" * (SYMBOL_NAME_MAX_CHARS + 1)}, "must be one line"),
        ({"name": "a\nb"}, "must be one line"),
        ({"name": "x", "prefer": ["a.py", 3]}, "'prefer' must be a list of strings, got int at position 1"),
        ({"name": "x", "prefer": {"a.py": 1}}, "'prefer' must be a list of strings, got dict"),
    ],
)
async def test_bad_arguments_are_correctable_errors(
    toolbox: Toolbox, arguments: dict[str, object], fragment: str
) -> None:
    outcome = await toolbox.run("find_symbol", arguments)
    assert outcome.is_error and fragment in outcome.text


async def test_a_name_that_is_not_an_identifier_is_not_scanned(toolbox: Toolbox) -> None:
    text = await _text(toolbox, name="rm -rf /")
    assert "looks for identifiers only" in text


async def test_without_ripgrep_there_is_no_index_and_the_scan_says_it_is_unavailable(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", {"models.py": _MODELS})
    box = await Toolbox.create(root, ToolLimits(use_ripgrep=False), index_path=tmp_path / "index.sqlite")
    assert box.index is None  # the index records ripgrep's listing: without ripgrep there is none
    assert "workspace scan is unavailable" in await _text(box, name="load")


def test_the_schema_states_the_caps_the_constants_set() -> None:
    schema = next(s for s in TOOL_SCHEMAS if s["name"] == "find_symbol")
    assert f"at most {SYMBOL_MAX_DEFINITIONS} definitions and {SYMBOL_MAX_USE_FILES} files" in json.loads(
        json.dumps(schema["description"])
    )
    assert schema["input_schema"]["required"] == ["name"]
    assert schema["input_schema"]["properties"]["kind"]["enum"] == ["definition", "uses", "both"]


async def test_a_comment_naming_the_symbol_is_not_taken_for_a_definition(tmp_path: Path) -> None:
    big = "# " + "x" * CARD_PARSE_MAX_BYTES + "\n# retry_later is defined elsewhere\nretry_later()\n"
    root = _workspace(tmp_path / "ws", {"big.py": big, "run.sh": "# retry_later here\nretry_later\n"})
    text = await _text(await Toolbox.create(root), name="retry_later", kind="definition")
    assert text == "No definition of 'retry_later' found (workspace scan)."


@pytest.mark.parametrize("parent_ignore", ["nested/", "*"])
async def test_the_scan_finds_a_nested_repositorys_definitions_its_parent_ignores(
    tmp_path: Path, parent_ignore: str
) -> None:
    (tmp_path / "parent").mkdir()
    (tmp_path / "parent" / ".gitignore").write_text(parent_ignore + "\n")
    repo = RepoBuilder(tmp_path / "parent" / "nested").write(".gitignore", "build/\n")
    repo.write("src/app.py", "def hello_world():\n    return 1\n")
    repo.write("build/gen.py", "def hello_world():\n    pass\n")
    box = await Toolbox.create(repo.root)
    if box.ripgrep is None:
        pytest.skip("ripgrep is not installed (the `ripgrep` wheel provides it): the workspace scan needs it")
    text = await _text(box, name="hello_world", kind="definition")
    assert text.splitlines()[1:] == ["src/app.py:1-2  hello_world (function)  def hello_world()"]  # not build/


async def test_files_mentioning_lists_every_file_naming_a_name_or_none_when_it_cannot_tell_them_all(
    tmp_path: Path,
) -> None:
    files = {"net.py": "def retry():\n    pass\n", "a.py": "retry()\n", "b.py": "x = retry\n", "c.py": "retrying()\n"}
    box = await Toolbox.create(_workspace(tmp_path, files))
    assert await box.files_mentioning(["retry"], 10) == ("a.py", "b.py", "net.py")
    assert await box.files_mentioning(["net.retry", "retrying"], 10) == ("a.py", "b.py", "c.py", "net.py")
    assert await box.files_mentioning(["retry"], 2) is None  # more than it may list
    assert await box.files_mentioning(["not a name"], 10) is None
    assert await box.files_mentioning([], 10) is None
