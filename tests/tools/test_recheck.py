"""Re-checking what ripgrep reported: an entry reached through a link, gone, or whose line is not the
one on disk is not shown; what is really there is."""

from __future__ import annotations

from pathlib import Path

from live_memory.constants import GREP_MAX_COLUMNS
from live_memory.tools.recheck import OMITTED_LINE, Recheck


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("one\ntwo needle\r\nthree\n" + "x" * (GREP_MAX_COLUMNS + 5) + "\nlast")
    (root / "src" / "deep" / "b.py").write_text("needle\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "b.py").write_text("needle OUTSIDE\n")
    (root / "linked").symlink_to(tmp_path / "outside")
    (root / "src" / "file_link.py").symlink_to(tmp_path / "outside" / "b.py")
    return root


def test_files_and_directories_count_only_when_reached_without_links(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with Recheck(str(root)) as recheck:
        assert recheck.is_file("src/a.py") and recheck.is_file("src/deep/b.py")
        assert recheck.is_dir("src/deep") and not recheck.is_dir("src/a.py")
        assert not recheck.is_file("linked/b.py")  # a linked directory on the way
        assert not recheck.is_file("src/file_link.py")  # the entry itself is a link
        assert not recheck.is_file("src/missing.py") and not recheck.is_file("nowhere/a.py")
        assert recheck.is_file("src/a.py")  # back up the tree after a failed lookup


def test_content_lines_must_be_the_lines_on_disk(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with Recheck(str(root)) as recheck:
        assert recheck.line_matches("src/a.py", 2, "two needle")  # CR dropped, as ripgrep's output is
        assert recheck.line_matches("src/a.py", 4, OMITTED_LINE)
        assert recheck.line_matches("src/a.py", 5, "last")  # no final newline
        assert not recheck.line_matches("src/a.py", 6, "")  # past the end
        assert recheck.line_matches("src/a.py", 1, "one")  # an earlier line: the file is read again
        assert not recheck.line_matches("src/a.py", 3, "three but different")
        assert not recheck.line_matches("src/a.py", 3, OMITTED_LINE)  # a short line is never omitted
        assert not recheck.line_matches("linked/b.py", 1, "needle OUTSIDE")
        assert not recheck.line_matches("src/file_link.py", 1, "needle OUTSIDE")
        assert recheck.line_matches("src/deep/b.py", 1, "needle")


def test_a_directory_swapped_for_a_link_after_the_search_hides_what_was_found_in_it(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "src" / "deep").rename(tmp_path / "deep-away")
    (root / "src" / "deep").symlink_to(tmp_path / "outside")
    with Recheck(str(root)) as recheck:
        assert not recheck.is_file("src/deep/b.py")
        assert not recheck.line_matches("src/deep/b.py", 1, "needle OUTSIDE")
