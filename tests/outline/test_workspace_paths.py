"""The workspace's files as a question names them: a whole path or the end of one, a directory with or without
its final "/", and nothing at all when a name could mean several."""

from __future__ import annotations

from live_memory.outline.workspace_paths import WorkspacePaths

PATHS = WorkspacePaths(
    ["server/cli/main.py", "bench/main.py", "server/store.py", "docs/guide.md", "server/tools/read.py"]
)


def test_a_file_is_found_by_its_whole_path_or_an_end_no_other_file_has() -> None:
    assert PATHS.file("server/store.py") == "server/store.py"
    assert PATHS.file("store.py") == "server/store.py"
    assert PATHS.file("cli/main.py") == "server/cli/main.py"
    assert PATHS.file("`./docs/guide.md`") == "docs/guide.md"


def test_a_name_several_files_end_with_or_none_does_means_no_file() -> None:
    assert PATHS.file("main.py") is None  # server/cli/main.py or bench/main.py: which one is not known
    assert PATHS.file("ore.py") is None  # not an end of a path's components
    assert PATHS.file("missing.py") is None
    assert PATHS.file("") is None


def test_a_directory_is_found_with_or_without_its_final_slash_and_lists_the_files_under_it() -> None:
    assert PATHS.directory("tools/") == "server/tools"
    assert PATHS.directory("server/cli") == "server/cli"
    assert PATHS.directory("server/") == "server"
    assert PATHS.directory("nowhere/") is None
    assert PATHS.under("server") == ["server/cli/main.py", "server/store.py", "server/tools/read.py"]
