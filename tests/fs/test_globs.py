"""The one glob dialect (ripgrep's and gitignore's) that Glob, find_paths, Grep's filter, ignore rules and
secret matching share: the same pattern must select the same files whichever engine evaluates it."""

from __future__ import annotations

import re

import pytest

from live_memory.core.errors import GlobError
from live_memory.fs.globs import compile_path_glob, glob_to_regex, has_glob_magic


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("*.py", ["a.py", ".py"], ["a/b.py", "a.pyc"]),
        ("**/*.py", ["a.py", "a/b/c.py"], ["a/b.pyc"]),
        ("src/**", ["src/a", "src/a/b"], ["src", "lib/src/a"]),
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/xb"]),
        ("?.txt", ["a.txt"], ["ab.txt", "/.txt"]),
        ("[ab].md", ["a.md", "b.md"], ["c.md"]),
        ("[!ab].md", ["c.md"], ["a.md", "/.md"]),
        ("*.{ts,tsx}", ["a.ts", "a.tsx"], ["a.js"]),
        ("{src,lib}/**/*.{c,h}", ["src/a.c", "lib/x/y.h"], ["doc/a.c"]),
        ("a\\*b", ["a*b"], ["axb"]),
        ("[unclosed", ["[unclosed"], ["u"]),
        ("{unclosed", ["{unclosed"], ["unclosed"]),
        ("a**b", ["ab", "axxb"], ["a/b"]),
    ],
)
def test_glob_dialect(glob: str, matches: list[str], misses: list[str]) -> None:
    regex = re.compile(glob_to_regex(glob), re.DOTALL)
    for text in matches:
        assert regex.fullmatch(text), (glob, text)
    for text in misses:
        assert not regex.fullmatch(text), (glob, text)


def test_glob_without_slash_matches_base_names_and_with_slash_whole_paths() -> None:
    assert compile_path_glob("*.md").matches("docs/deep/a.md")
    assert not compile_path_glob("docs/*.md").matches("x/docs/a.md")
    assert compile_path_glob("/docs/*.md").matches("docs/a.md")
    assert compile_path_glob("README*", case_insensitive=True).matches("readme.txt")


def matches(glob: str, path: str, *, braces: bool = True) -> bool:
    return re.fullmatch(glob_to_regex(glob, braces=braces), path, re.DOTALL) is not None


@pytest.mark.parametrize(("pattern", "magic"), [("*.py", True), ("a?", True), ("[ab]", True), ("{a,b}", True)])
def test_any_metacharacter_makes_a_pattern_a_glob(pattern: str, magic: bool) -> None:
    assert has_glob_magic(pattern) is magic


def test_a_plain_name_is_not_a_glob() -> None:
    assert not has_glob_magic("src/app.py")
    assert not has_glob_magic("")


def test_without_braces_a_brace_is_a_literal_as_in_gitignore() -> None:
    assert matches("{a,b}.txt", "{a,b}.txt", braces=False)
    assert not matches("{a,b}.txt", "a.txt", braces=False)
    assert matches("{a,b}.txt", "a.txt")


def test_nested_alternatives_and_double_stars_inside_them() -> None:
    assert matches("{src/**/*.py,docs/{api,guide}/*.md}", "src/a/b/c.py")
    assert matches("{src/**/*.py,docs/{api,guide}/*.md}", "docs/guide/intro.md")
    assert not matches("{src/**/*.py,docs/{api,guide}/*.md}", "docs/other/intro.md")


def test_regex_metacharacters_in_a_glob_are_literal() -> None:
    assert matches("a+b(1).py", "a+b(1).py")
    assert not matches("a+b(1).py", "aab1.py")
    assert matches("$HOME.^", "$HOME.^")


@pytest.mark.parametrize(
    ("glob", "path"),
    [("[[]x", "[x"), ("[a&&b]", "&"), ("[]]x", "]x"), ("[^a]", "b"), ("[a\\]", "\\")],
)
def test_character_classes_with_regex_set_operators_mean_their_characters(glob: str, path: str) -> None:
    assert matches(glob, path)


def test_a_character_class_never_matches_a_slash() -> None:
    assert not matches("a[/x]b", "a/b")
    assert not matches("a[!x]b", "a/b")
    assert matches("a[!x]b", "a-b")


def test_a_trailing_slash_on_a_pattern_does_not_stop_it_matching_the_directory() -> None:
    assert compile_path_glob("build/").matches("src/build")
    assert not compile_path_glob("build/").anchored  # "build/" is still a base name, as in gitignore


def test_an_explicit_anchor_overrides_the_slash_rule() -> None:
    glob = compile_path_glob("*.py", anchored=True)
    assert glob.matches("a.py")
    assert not glob.matches("src/a.py")


def test_matching_is_case_sensitive_unless_asked() -> None:
    assert not compile_path_glob("*.PY").matches("a.py")
    assert compile_path_glob("*.PY", case_insensitive=True).matches("a.py")


def test_a_reversed_range_is_a_glob_error_naming_the_pattern() -> None:
    with pytest.raises(GlobError, match=r"invalid glob pattern '\[z-a\]\.py'"):
        compile_path_glob("[z-a].py")


def test_a_glob_matching_names_beginning_with_a_dot_like_ripgrep() -> None:
    assert compile_path_glob("*rc").matches("home/.bashrc")  # no dotfile exception in ripgrep's globs
    assert compile_path_glob("**").matches("a/.hidden/b")
