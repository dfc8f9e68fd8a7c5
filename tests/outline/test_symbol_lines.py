"""What a file says about names as the scan's ripgrep patterns would find it: every line that looks like a
definition of a name (checked against the scan's own pattern, name by name), the words it mentions, and the part
of a file ripgrep searches."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from live_memory.constants import GREP_MAX_COLUMNS
from live_memory.outline.cards import definition_regex
from live_memory.outline.symbol_lines import COMMENT, LONG, definition_lines, mentioned, searchable

_NOT_AFTER_NAME = r"(?:[^\w$]|$)"
_EVERY_RUN = re.compile(r"(?=([A-Za-z_$][\w$]*))")  # the run of word characters from every position


def _scan_pattern(word: str) -> re.Pattern[str]:
    """The scan's definition pattern for one name (tools/symbols.py builds the same for ripgrep)."""
    word = re.escape(word)
    assignment = rf"^{word}[ \t]*(?::[^=\n]*)?=(?:[^=]|$)"
    heading = rf"^ {{0,3}}#{{1,6}}[ \t]+(?:.*[^\w$])?{word}{_NOT_AFTER_NAME}"
    return re.compile(f"{definition_regex(word, variables=True)}{_NOT_AFTER_NAME}|{assignment}|{heading}")


def _by_pattern(text: str) -> dict[int, set[str]]:
    """Line number -> the names whose scan pattern matches that line, trying every word of it."""
    found: dict[int, set[str]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        names = {w for w in set(_EVERY_RUN.findall(line)) if _scan_pattern(w).search(line)}
        if names:
            found[number] = names
    return found


def _by_index(text: str) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for name, number, _flags in definition_lines(text):
        found.setdefault(number, set()).add(name)
    return found


SAMPLE = """\
import os
class Card(Base):
    def render(self) -> str:
        return ""
async def fetch(url): pass
export default function main() {}
export const answer = 42;
pub(crate) fn build<T>(x: T) {}
static const LIMIT = 3
func (r *Reader) Read(p []byte) (int, error) {}
macro_rules! my_macro { }
type Alias = int
VALUE = 1
typed: int = 2
equal == 3
  indented = 4
# Heading words and $dollar
### Deep heading: with_parts.and_more
####### too deep
#comment without space
   # a comment under three spaces
classes = "not a class"
def1 = 2
fn$weird = 1
let mut counter = 0
"""


def test_every_definition_line_is_found_for_exactly_the_names_the_scan_pattern_matches() -> None:
    assert _by_index(SAMPLE) == _by_pattern(SAMPLE)
    assert _by_index(SAMPLE)[9] == {"LIMIT", "const"}  # `static` is a modifier or a keyword, to the pattern


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "def",
                "class",
                "static",
                "const",
                "pub",
                "export",
                "async",
                "fn",
                "type",
                "let",
                "#",
                "##",
                "x",
                "Name",
                "_y",
                "$z",
                "(a)",
                "<T>",
                "*",
                "!",
                "=",
                ":",
                "==",
                " ",
                "  ",
                "\t",
                "1v",
                "é",
                "var",
            ]
        ),
        max_size=8,
    )
)
def test_generated_lines_agree_with_the_scan_pattern(parts: list[str]) -> None:
    line = " ".join(parts)
    assert _by_index(line) == _by_pattern(line)


def test_flags_mark_comments_and_lines_too_long_for_ripgrep_to_print() -> None:
    long_line = "def spacious():  # " + "x" * GREP_MAX_COLUMNS
    text = f"# noted here\ndef plain(): pass\n{long_line}\n# " + "y" * GREP_MAX_COLUMNS + " wordy\n"
    flags = {(name, number): flag for name, number, flag in definition_lines(text)}
    assert flags[("noted", 1)] == COMMENT
    assert flags[("plain", 2)] == 0
    assert flags[("spacious", 3)] == LONG
    assert flags[("wordy", 4)] == COMMENT | LONG


def test_line_numbers_count_every_line() -> None:
    text = "\n\n\nclass Late:\n    pass\n"
    assert definition_lines(text) == [("Late", 4, 0)]


def test_mentions_are_whole_words_that_start_as_identifiers() -> None:
    assert mentioned("x = foo.bar($baz) + 1qux _u é2 Foo") == {"x", "foo", "bar", "$baz", "_u", "Foo"}


def test_ripgrep_skips_a_file_with_a_nul_early_and_stops_at_a_late_one() -> None:
    assert searchable(b"def a():\n\x00pass\n") is None
    late = b"def kept():\n" + b"x" * (70 * 1024) + b"\n\x00def lost():\n"
    text = searchable(late)
    assert text is not None and "kept" in text and "lost" not in text
    assert searchable(b"caf\xe9 ok\n") == "caf\udce9 ok\n"  # undecodable bytes are never word characters


def test_outside_markdown_a_comment_only_names_its_words_once_for_the_file() -> None:
    text = "# the load path\ndef load():\n    pass\n   # load again, then\n    # deeper: not a heading to the pattern\n"
    assert definition_lines(text, markdown=False) == [
        ("load", 2, 0),
        ("again", 0, COMMENT),
        ("load", 0, COMMENT),
        ("path", 0, COMMENT),
        ("the", 0, COMMENT),
        ("then", 0, COMMENT),
    ]
    long_comment = "# " + "word " * GREP_MAX_COLUMNS
    assert definition_lines(long_comment, markdown=False) == [("word", 1, COMMENT | LONG)]  # shown: numbered
