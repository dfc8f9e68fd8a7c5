"""The gitignore-aware walker shared by Glob, find_paths and the directory tree."""

from __future__ import annotations

from pathlib import Path

from live_memory.fs.walk import parse_ignore_text, walk_paths


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_walker_honours_gitignore_semantics(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".gitignore": ("# comment\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/**/*.tmp\nescaped\\ space\\ \nx/\n"),
            "a.log": "",
            "keep.log": "",
            "top.txt": "",
            "sub/top.txt": "",
            "build/out": "",
            "sub/build/out": "",
            "docs/a/b.tmp": "",
            "docs/c.txt": "",
            "escaped space ": "",
            "x": "",  # a file named x: "x/" matches directories only
            "y/x/z": "",
            "sub/.gitignore": "!a.log\n*.txt\n",
            "sub/a.log": "",
            "sub/deeper/b.txt": "",
            ".hidden/h": "",
            ".git/config": "",
        },
    )
    files = sorted(rel for rel, _ in walk_paths(str(tmp_path)))
    assert files == [
        ".gitignore",
        ".hidden/h",
        "docs/c.txt",
        "keep.log",
        "sub/.gitignore",
        "sub/a.log",  # re-included by the deeper ignore file
        "x",
    ]


def test_walker_reads_info_exclude_and_ignore_files_and_starts_below_the_root(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".git/info/exclude": "secret-notes/\n",
            ".ignore": "*.bak\n",
            "secret-notes/a": "",
            "src/.rgignore": "gen/\n",
            "src/gen/x.py": "",
            "src/a.bak": "",
            "src/a.py": "",
        },
    )
    assert sorted(rel for rel, _ in walk_paths(str(tmp_path))) == [".ignore", "src/.rgignore", "src/a.py"]
    assert sorted(rel for rel, _ in walk_paths(str(tmp_path), "src")) == ["src/.rgignore", "src/a.py"]


def test_walker_never_follows_symlinks_and_lists_directories_on_request(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("x")
    ws = tmp_path / "ws"
    _tree(ws, {"a/b.txt": ""})
    (ws / "link_dir").symlink_to(outside)
    (ws / "link_file").symlink_to(outside / "x.txt")
    assert list(walk_paths(str(ws), include_dirs=True)) == [("a", True), ("a/b.txt", False)]


def test_walker_stops_when_asked(tmp_path: Path) -> None:
    _tree(tmp_path, {f"d{i}/f.txt": "" for i in range(5)})
    assert list(walk_paths(str(tmp_path), should_stop=lambda: True)) == []


def test_ignore_parser_skips_blank_and_comment_lines() -> None:
    rules = parse_ignore_text("\n# c\n\\#literal\n!neg\ndir/\n/anchored\n")
    assert [(r.negate, r.dir_only, r.anchored) for r in rules] == [
        (False, False, False),
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ]
    assert rules[0].regex.fullmatch("#literal")
