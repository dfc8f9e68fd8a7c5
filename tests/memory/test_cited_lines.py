"""Lines answers cite: parsing citations, cutting them out as Read numbers them, following them through edits."""

from __future__ import annotations

import hashlib

from live_memory.constants import CITED_LINES_MAX_LINES
from live_memory.memory.cited_lines import SHA_SHOWN, Citation, CitedLines, citations, cut, relocated, render

KNOWN = ("src/app.py", "src/db.py", "README.md")
APP = "import os\n\n\ndef main():\n    port = os.environ['PORT']\n    return serve(port)\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def held(text: str, first: int, last: int, path: str = "src/app.py") -> CitedLines:
    lines = cut(text, sha(text), Citation(path, first, last))
    assert lines is not None
    return lines


def test_a_range_and_a_single_line_of_known_files_are_citations_in_order() -> None:
    answer = "The port is read in src/app.py:4-6 (see `src/db.py:12`), and documented in README.md:3."
    assert citations(answer, KNOWN) == [
        Citation("src/app.py", 4, 6),
        Citation("src/db.py", 12, 12),
        Citation("README.md", 3, 3),
    ]


def test_a_citation_named_twice_counts_once() -> None:
    answer = "src/app.py:4-6 starts it; as src/app.py:4-6 shows, and src/app.py:4 too."
    assert citations(answer, KNOWN) == [Citation("src/app.py", 4, 6), Citation("src/app.py", 4, 4)]


def test_unknown_files_are_not_citations() -> None:
    answer = "See src/other.py:3-9, lib/src/app.py:4-6 and http://localhost:8080 for more."
    assert citations(answer, KNOWN) == []


def test_a_path_written_from_the_current_directory_is_the_same_file() -> None:
    assert citations("Look at ./src/app.py:4-5.", KNOWN) == [Citation("src/app.py", 4, 5)]


def test_a_range_too_long_to_be_lines_cites_the_whole_file_and_is_left_out() -> None:
    most = CITED_LINES_MAX_LINES
    answer = f"src/app.py:1-{most} and src/db.py:1-{most + 1}"
    assert citations(answer, KNOWN) == [Citation("src/app.py", 1, most)]


def test_backwards_and_zero_ranges_are_not_citations() -> None:
    assert citations("src/app.py:9-3 and src/app.py:0 and src/db.py:0-2", KNOWN) == []


def test_cut_numbers_the_lines_as_the_read_tool_shows_them() -> None:
    lines = cut(APP, sha(APP), Citation("src/app.py", 4, 6))
    assert lines == CitedLines(
        "src/app.py",
        sha(APP),
        4,
        6,
        "4\tdef main():\n5\t    port = os.environ['PORT']\n6\t    return serve(port)",
    )
    assert lines.key == ("src/app.py", 4, 6)


def test_cut_past_the_end_of_the_file_gives_nothing() -> None:
    assert cut(APP, sha(APP), Citation("src/app.py", 5, 40)) is None
    assert cut(APP, sha(APP), Citation("src/app.py", 60, 61)) is None


def test_a_block_names_the_file_the_lines_and_the_short_hash() -> None:
    lines = held(APP, 4, 5)
    assert lines.block() == (
        f"### src/app.py:4-5 (sha {sha(APP)[:SHA_SHOWN]})\n```\n4\tdef main():\n5\t    port = os.environ['PORT']\n```"
    )
    assert len(sha(APP)[:SHA_SHOWN]) == 12


def test_render_lists_held_lines_by_file_then_line() -> None:
    db = "URL = 'sqlite://'\nPOOL = 4\n"
    late, early, other = held(APP, 5, 6), held(APP, 1, 1), held(db, 2, 2, path="src/db.py")
    text = render({late.key: late, other.key: other, early.key: early})
    assert text == "\n\n".join([early.block(), late.block(), other.block()])


def test_an_edit_above_the_lines_only_moves_them() -> None:
    lines = held(APP, 4, 6)
    edited = "import os\nimport sys\n\n\ndef main():\n    port = os.environ['PORT']\n    return serve(port)\n"
    moved = relocated(lines, edited, sha(edited))
    assert moved is not None
    assert (moved.first, moved.last, moved.sha256) == (5, 7, sha(edited))
    assert moved.text == "5\tdef main():\n6\t    port = os.environ['PORT']\n7\t    return serve(port)"


def test_an_edit_below_the_lines_keeps_them_where_they_were() -> None:
    lines = held(APP, 4, 5)
    edited = APP + "\n\ndef other():\n    pass\n"
    moved = relocated(lines, edited, sha(edited))
    assert moved is not None and (moved.first, moved.last, moved.text) == (4, 5, lines.text)


def test_an_edit_inside_the_lines_drops_them() -> None:
    lines = held(APP, 4, 6)
    edited = APP.replace("os.environ['PORT']", "int(os.environ['PORT'])")
    assert relocated(lines, edited, sha(edited)) is None


def test_lines_the_edit_removed_are_dropped() -> None:
    lines = held(APP, 4, 6)
    edited = "import os\n"
    assert relocated(lines, edited, sha(edited)) is None


def test_an_edit_that_extends_the_last_held_line_drops_them() -> None:
    text = "def f():\n    return 1\n"
    lines = held(text, 2, 2)
    edited = "def f():\n    return 10\n"
    assert relocated(lines, edited, sha(edited)) is None


def test_held_lines_do_not_move_onto_a_longer_line_that_only_starts_like_them() -> None:
    text = "def f():\n    return 1\n"
    lines = held(text, 2, 2)
    edited = "def g():\n    return 100\n\ndef f():\n    return 1\n"
    moved = relocated(lines, edited, sha(edited))
    assert moved is not None and (moved.first, moved.text) == (5, "5\t    return 1")


def test_a_match_must_start_at_the_start_of_a_line() -> None:
    text = "def f():\n    x = 1\n"
    lines = held(text, 2, 2)
    edited = "y    x = 1\ndef f():\n    x = 1\n"  # the first occurrence sits inside another line
    moved = relocated(lines, edited, sha(edited))
    assert moved is not None and (moved.first, moved.last, moved.text) == (3, 3, "3\t    x = 1")
