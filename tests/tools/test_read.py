"""Read: numbered windows of text files, paging, caps, and precise errors."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from live_memory.tools import FileRead, Toolbox, ToolLimits
from tests.fakes.repo_builder import HistoryRepo


def _read_of(root: Path, rel: str) -> FileRead:
    data = (root / rel).read_bytes()
    return FileRead(rel, hashlib.sha256(data).hexdigest(), len(data))


async def test_read_numbers_lines_like_cat_n_and_reports_the_file_read(toolbox: Toolbox, repo_root: Path) -> None:
    outcome = await toolbox.run("Read", {"file_path": "src/app/main.py"})
    assert not outcome.is_error
    lines = outcome.text.splitlines()
    assert lines[0] == '1\t"""Entry point of the demo app."""'
    assert lines[1] == "2\t"
    assert len(lines) == 16
    assert outcome.files_read == (_read_of(repo_root, "src/app/main.py"),)


async def test_read_accepts_the_legacy_path_alias_and_absolute_inside_paths(toolbox: Toolbox, repo_root: Path) -> None:
    by_alias = await toolbox.run("Read", {"path": "src/app/main.py"})
    absolute = await toolbox.run("Read", {"file_path": str(repo_root / "src/app/main.py")})
    plain = await toolbox.run("Read", {"file_path": "src/app/main.py"})
    assert by_alias == plain == absolute


async def test_read_through_an_inside_symlink_reports_the_real_path(toolbox: Toolbox, repo_root: Path) -> None:
    outcome = await toolbox.run("Read", {"file_path": "ok_link.py"})
    assert outcome.files_read == (_read_of(repo_root, "src/app/main.py"),)


async def test_a_partial_read_reports_the_hash_and_size_of_the_whole_file(toolbox: Toolbox, repo_root: Path) -> None:
    outcome = await toolbox.run("Read", {"file_path": "data/big.txt", "offset": 10, "limit": 2})
    assert len(outcome.text.splitlines()) == 4  # two lines, a blank line, the footer
    assert outcome.files_read == (_read_of(repo_root, "data/big.txt"),)


async def test_a_file_over_the_hash_cap_is_shown_but_not_recorded_as_read(repo_root: Path) -> None:
    box = await Toolbox.create(repo_root, ToolLimits(hash_max_bytes=100))
    outcome = await box.run("Read", {"file_path": "src/app/main.py"})  # 290 bytes
    assert not outcome.is_error and "Entry point" in outcome.text
    assert outcome.files_read == ()


async def test_read_of_a_long_file_shows_the_default_window_and_how_to_continue(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Read", {"file_path": "data/big.txt"})
    lines = outcome.text.splitlines()
    assert lines[0] == "1\tline 1: filler text"
    assert lines[1999] == "2000\tline 2000: filler text needle"
    assert lines[-1] == "[Showing lines 1-2000 of 5000. Call Read with offset=2001 to continue.]"


async def test_read_offset_and_limit_page_through_a_file(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Read", {"file_path": "data/big.txt", "offset": 4999, "limit": 5})
    assert outcome.text.splitlines() == [
        "4999\tline 4999: filler text",
        "5000\tline 5000: filler text needle",
    ]
    middle = await toolbox.run("Read", {"file_path": "data/big.txt", "offset": 10, "limit": 2})
    assert middle.text.splitlines()[:2] == ["10\tline 10: filler text", "11\tline 11: filler text"]
    assert "Call Read with offset=12 to continue" in middle.text


async def test_read_offset_past_the_end_is_a_correctable_error(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Read", {"file_path": "src/app/main.py", "offset": 99})
    assert outcome.is_error
    assert "past the end" in outcome.text and "16 lines" in outcome.text


async def test_read_cuts_overlong_lines(repo_root: Path) -> None:
    box = await asyncio.to_thread(Toolbox, repo_root, ToolLimits(max_line_chars=100))
    outcome = await box.run("Read", {"file_path": "src/app/long_line.js"})
    assert outcome.text.startswith("1\tvar RateLimiter = 'xxx")
    assert outcome.text.endswith("… [line cut at 100 characters]")
    assert len(outcome.text) < 200


async def test_read_stays_within_the_byte_cap_and_says_so(repo_root: Path) -> None:
    box = await asyncio.to_thread(Toolbox, repo_root, ToolLimits(max_output_bytes=2000))
    outcome = await box.run("Read", {"file_path": "data/big.txt"})
    assert len(outcome.text.encode()) <= 2000
    assert "output capped at 2000 bytes" in outcome.text
    assert "Call Read with offset=" in outcome.text


async def test_read_strips_crlf_and_keeps_unicode(toolbox: Toolbox) -> None:
    crlf = await toolbox.run("Read", {"file_path": "src/app/crlf.txt"})
    assert crlf.text == "1\tfirst RateLimiter line\n2\tsecond line"
    uni = await toolbox.run("Read", {"file_path": "src/app/unicode.txt"})
    assert "Grüße vom RateLimiter — ünïcödé" in uni.text


async def test_read_of_an_empty_file_says_it_is_empty(toolbox: Toolbox, repo_root: Path) -> None:
    outcome = await toolbox.run("Read", {"file_path": "src/app/__init__.py"})
    assert not outcome.is_error
    assert "is empty" in outcome.text
    assert outcome.files_read == (_read_of(repo_root, "src/app/__init__.py"),)


async def test_read_of_an_ignored_file_named_explicitly_is_allowed(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Read", {"file_path": "debug.log"})
    assert not outcome.is_error


async def test_read_errors_are_precise_and_correctable(toolbox: Toolbox) -> None:
    cases = {
        "src/app/nope.py": "File does not exist",
        "src": "is a directory",
        "assets/logo.png": "binary file",
        "pipe.fifo": "FIFO",
        "loop_a": "does not resolve",
    }
    for path, fragment in cases.items():
        outcome = await toolbox.run("Read", {"file_path": path})
        assert outcome.is_error, path
        assert fragment in outcome.text, outcome.text
        assert outcome.files_read == ()


async def test_read_argument_errors_name_the_argument(toolbox: Toolbox) -> None:
    missing = await toolbox.run("Read", {})
    assert missing.is_error and "'file_path' is required" in missing.text
    wrong = await toolbox.run("Read", {"file_path": "README.md", "offset": "ten"})
    assert wrong.is_error and "'offset' must be an integer" in wrong.text
    negative = await toolbox.run("Read", {"file_path": "README.md", "limit": 0})
    assert negative.is_error and "'limit' must be at least 1" in negative.text
    numeric_string = await toolbox.run("Read", {"file_path": "README.md", "limit": "2"})
    assert not numeric_string.is_error and len(numeric_string.text.splitlines()) == 4


async def test_read_notes_unsupported_parameters_instead_of_failing(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Read", {"file_path": "README.md", "pages": "1-2"})
    assert not outcome.is_error
    assert outcome.text.endswith("(note: ignored unsupported parameter(s): pages)")


async def test_read_of_a_huge_single_line_reads_only_the_window(tmp_path: Path) -> None:
    (tmp_path / "bundle.min.js").write_bytes(b"a" * (8 * 1024 * 1024) + b"\nsecond\n")
    box = await asyncio.to_thread(Toolbox, tmp_path)
    outcome = await box.run("Read", {"file_path": "bundle.min.js"})
    assert outcome.text.splitlines()[1] == "2\tsecond"
    assert len(outcome.text) < 3000


async def test_read_of_a_file_without_trailing_newline_shows_its_last_line(
    history_repo: HistoryRepo, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo")
    outcome = await (await asyncio.to_thread(Toolbox, tmp_path)).run("Read", {"file_path": "a.txt"})
    assert outcome.text == "1\tone\n2\ttwo"
