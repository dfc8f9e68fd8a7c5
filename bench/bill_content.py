"""Content questions for the session bill: questions whose answer needs the bodies of files, not one definition.

A user asks what a file does and how it is organised ("walkthrough"), to review a file for a concern ("review"),
or what a directory does about a topic taken from its files' own prose: docstrings, comments, Markdown text
("area": the answer needs the 2-4 files under the directory that mention the topic). Later the same need is
asked again in other words ("follow-up"), in a new session or well after, as agents do once their own context
has moved on. A file is named as a user names it: by the shortest part of its path that no other file ends
with (`cli/main.py`), or now and then by its whole path; a directory likewise (`tools/`).

Each need's answer is a function of the files as they are when it is asked (`need_answer`): a follow-up on
unchanged files has the very text of the first answer, and one on edited files cites their new lines. Nothing
here imports the service.
"""

from __future__ import annotations

import functools
import io
import math
import random
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from bench.bill_outline import definition_range, symbols_in

CONTENT_KINDS = ("walkthrough", "review", "area", "follow-up")
# Of the questions that touch files, this share asks about content (edits stay edits: the share is taken of
# the questions that edit nothing so that it is this share of all of them).
CONTENT_SHARE = 0.4
# Of the content questions, this share asks again for an earlier need when one is old enough: asked in an
# earlier session, or at least FOLLOW_UP_MIN_GAP tasks before (by then an agent's context has moved on).
FOLLOW_UP_SHARE = 0.3
FOLLOW_UP_MIN_GAP = 15
AREA_SHARE = 0.45  # of the new needs: a directory and a topic; the rest one file
REVIEW_SHARE = 0.35  # of the one-file needs: a review for a concern; the rest a walkthrough
AREA_FILES = (2, 4)  # an area's topic is mentioned by this many files under its directory
FULL_PATH_SHARE = 0.3  # a file or directory is named by its whole path this often (else its shortest unique end)
TOPIC_MIN_CHARS = 5
TOPIC_CHOICES = 3  # an area's topic is drawn from its most topical words
ANSWER_CHARS = (700, 1300)
ANSWER_CHARS_PER_FILE = 220
ANSWER_DEFINITIONS = 6  # definitions an answer cites per file

CONCERNS = (
    "error handling",
    "input validation",
    "resource cleanup",
    "thread safety",
    "performance",
    "naming consistency",
)
_WALKTHROUGH = (
    "What does `{file}` do and how is it organised?",
    "Walk me through `{file}`.",
    "Give me an overview of `{file}`: its parts and how they fit together.",
)
_REVIEW = (
    "Review `{file}` for {concern}.",
    "Are there {concern} problems in `{file}`?",
    "Check `{file}` for {concern} issues.",
)
_AREA = (
    "What does `{area}` do about {topic}?",
    "Which modules under `{area}` deal with {topic}, and how?",
    "How is {topic} handled in `{area}`?",
)
_FOLLOW_UPS = {
    "walkthrough": (
        "Remind me what `{file}` does and how it is laid out.",
        "Give me the overview of `{file}` again: what is in it?",
        "How is `{file}` organised, again?",
    ),
    "review": (
        "Once more: does `{file}` have {concern} problems?",
        "Re-check `{file}` for {concern}.",
    ),
    "area": (
        "Remind me how `{area}` handles {topic}.",
        "Which files in `{area}` deal with {topic} again, and how?",
    ),
}
_FIRST_LINES = {
    "walkthrough": "Short answer: `{name}` ({cited}) is organised as follows.",
    "review": "Short answer: `{name}` ({cited}) reviewed for {topic}: the places to look at follow.",
    "area": "Short answer: in `{area}`, {topic} is handled in {cited}.",
}
_POINTS = (
    "{cite} `{sym}` holds this part; callers reach it through the module's public names.",
    "{cite} `{sym}` keeps its state on the instance and validates its input first.",
    "{cite} `{sym}` is where the work happens; errors surface as the exceptions raised there.",
    "{cite} `{sym}` depends on the helpers around it and is called from the surrounding module.",
)
_FILLER = ("the", "call", "path", "value", "check", "returns", "when", "handler", "state", "then", "module", "error")
# Words too common to be a topic: English function words and the vocabulary every Python file shares.
_COMMON_WORDS = """
    about above according actual actually added adding after again against allow allowed allows almost already
    also although always another anyone anything anyway applied apply argument arguments around available avoid
    based because become before being below better between beyond both bring build built called calls cannot
    certain change changed changes check checked checks class classes close common complete contain contains
    correct could create created creates current currently custom default defaults define defined defines
    different directly does doesn doing done during each easier either empty enough ensure entire especially
    every everything exactly example except exist existing exists expect expected explicitly extra fails false
    field fields first following found function functions further given gives going handle handled handles
    happen happens having however ignore ignored important include included includes including indeed initial
    inside instance instead itself keeps known kwargs large later least leave left less likely longer makes
    making many maybe means method methods might minimal missing modify module modules more most much multiple
    must necessary need needed needs never newer next none notes nothing number numbers object objects often
    older once only order other others otherwise output overall param parameter parameters params particular
    pass passed passes place please point possible previous previously probably proper properly provide provided
    provides raise raised raises rather really reason recent regular related remove removed replace required
    requires result results return returned returns right same second see seems separate should shown similar
    simple simply since single small some something sometimes specific specified still string strings such
    support supported sure take takes than that their them then there therefore these they thing things think
    this those though through thus together true types under unless unlike until update updated upon usage used
    useful uses using usual usually valid value values various very want whatever when whenever where whether
    which while whole within without work works would write written wrong yield
"""
_COMMON = frozenset(_COMMON_WORDS.split())
# A word as prose writes it: lowercase, or with a capital first letter only (a sentence's start).
_PROSE_WORD = re.compile(rf"(?<![\w.])[A-Za-z][a-z]{{{TOPIC_MIN_CHARS - 1},}}(?![\w(])")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


Topics = list[tuple[str, tuple[str, ...]]]  # (topic, the files that mention it)


@dataclass(frozen=True)
class Need:
    """What a content question needs: the whole current bytes of `files`, for a walkthrough, a review for a
    concern (`topic`), or a directory's (`area`) files that mention `topic`."""

    kind: str  # walkthrough | review | area
    files: tuple[str, ...]
    topic: str = ""
    area: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.area}:{self.topic}:{','.join(self.files)}"


# -- names as a user gives them ------------------------------------------------------------------------------
def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path's shortest ending (whole components) that no other path of `paths` ends with."""
    parts = {p: PurePosixPath(p).parts for p in paths}
    counts: dict[tuple[str, ...], int] = {}
    for split in parts.values():
        for k in range(1, len(split) + 1):
            counts[split[-k:]] = counts.get(split[-k:], 0) + 1
    out: dict[str, str] = {}
    for path, split in parts.items():
        k = next((k for k in range(1, len(split) + 1) if counts[split[-k:]] == 1), len(split))
        out[path] = "/".join(split[-k:])
    return out


@functools.lru_cache(maxsize=8)
def _names_of(files: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    every = sorted({d for p in files for d in _ancestors(p)})
    return short_names(files), short_names(every) if every else {}


def _ancestors(path: str) -> list[str]:
    parents = [str(p) for p in PurePosixPath(path).parents]
    return [p for p in parents if p != "."]


def file_name(files: Sequence[str], path: str, whole: bool) -> str:
    return path if whole else _names_of(tuple(sorted(files)))[0][path]


def area_name(files: Sequence[str], directory: str, whole: bool) -> str:
    return (directory if whole else _names_of(tuple(sorted(files)))[1][directory]) + "/"


# -- topics from prose ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def prose_words(path: str, text: str) -> Mapping[str, int]:
    """How often each word of a file's prose occurs: a Python file's comments and docstrings, a Markdown file's
    text outside code fences; words as prose writes them (lowercase, or capitalised at a sentence's start: not an
    identifier's CamelCase or snake_case), at least TOPIC_MIN_CHARS letters, common words left out; lowercased."""
    if path.endswith(".md"):
        prose = _FENCE.sub(" ", text)
    elif path.endswith(".py"):
        chunks: list[str] = []
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT or (
                    token.type == tokenize.STRING and token.string.lstrip("rRuUbBfF")[:3] in ('"""', "'''")
                ):
                    chunks.append(token.string)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return {}
        prose = " ".join(chunks)
    else:
        return {}
    counts: dict[str, int] = {}
    for word in _PROSE_WORD.findall(prose):
        lowered = word.lower()
        if lowered not in _COMMON:
            counts[lowered] = counts.get(lowered, 0) + 1
    return counts


def area_topics(files: Mapping[str, str], directory: str, defined: frozenset[str]) -> Topics:
    """(topic, the files under `directory` that mention it), the most topical first: prose words of those files
    that 2-4 of them mention (as a word, any case) and their prose uses at least twice (a recurring theme of a few
    files, not a name any file defines, nor a part of the directory's path), ranked by those uses times how rare
    the word is in the whole repository (`reason`, `value` are everywhere; `supervisor`, `quarantine` are not).
    Worked out once per repository and directory (the workload draws the same directories again and again)."""
    key = (id(files), directory, defined)
    if key not in _TOPICS:
        _TOPICS[key] = _area_topics(files, directory, defined)
    return _TOPICS[key]


_TOPICS: dict[tuple[int, str, frozenset[str]], Topics] = {}


def _area_topics(
    files: Mapping[str, str], directory: str, defined: frozenset[str]
) -> list[tuple[str, tuple[str, ...]]]:
    prefix = directory.rstrip("/") + "/"
    under = sorted(p for p in files if p.startswith(prefix))
    if len(under) < AREA_FILES[0]:
        return []
    uses: dict[str, int] = {}
    for path in under:
        for word, count in prose_words(path, files[path]).items():
            uses[word] = uses.get(word, 0) + count
    excluded = {w.lower() for w in defined} | {part.lower() for part in PurePosixPath(directory).parts}
    lowered = _lowered(files)
    scored: list[tuple[float, str, tuple[str, ...]]] = []
    # One word of each singular and plural pair (a person asking about "blocks" means "block" too).
    words = {w.removesuffix("s"): w for w in sorted(uses, key=lambda w: (uses[w], w)) if uses[w] >= 2}
    for word in sorted(w for w in words.values() if w not in excluded):
        pattern = re.compile(rf"\b{word}\b")
        mention = tuple(p for p in under if word in lowered[p] and pattern.search(lowered[p]))
        if AREA_FILES[0] <= len(mention) <= AREA_FILES[1] and len(mention) < len(under):
            spread = sum(1 for text in lowered.values() if word in text)
            scored.append((-uses[word] * math.log(len(files) / spread), word, mention))
    return [(word, mention) for _, word, mention in sorted(scored)]


_LOWERED: dict[int, tuple[Mapping[str, str], dict[str, str]]] = {}


def _lowered(files: Mapping[str, str]) -> dict[str, str]:
    """The repository's texts in lowercase, made once per repository (the mapping itself is the key)."""
    known = _LOWERED.get(id(files))
    if known is None or known[0] is not files:
        known = _LOWERED[id(files)] = (files, {p: t.lower() for p, t in files.items()})
    return known[1]


def draw_need(rng: random.Random, files: Mapping[str, str], first: str, defined: frozenset[str]) -> Need:
    """A new content need about the file `first` (drawn with the workload's locality) or its directory."""
    if rng.random() < AREA_SHARE:
        directory = str(PurePosixPath(first).parent)
        for place in (directory, str(PurePosixPath(directory).parent)):
            topics = area_topics(files, place, defined)[:TOPIC_CHOICES] if place not in (".", "") else []
            if topics:
                topic, mentioned = rng.choice(topics)
                return Need("area", mentioned, topic, place)
    if rng.random() < REVIEW_SHARE:
        return Need("review", (first,), rng.choice(CONCERNS))
    return Need("walkthrough", (first,))


def question_for(rng: random.Random, need: Need, files: Sequence[str], follow_up: bool = False) -> str:
    """The question a user asks for `need`; `follow_up`: asked again, in other words than the first time."""
    if follow_up:
        phrasings = _FOLLOW_UPS[need.kind]
    else:
        phrasings = {"walkthrough": _WALKTHROUGH, "review": _REVIEW, "area": _AREA}[need.kind]
    whole = rng.random() < FULL_PATH_SHARE
    slots = {"concern": need.topic, "topic": need.topic}
    if need.kind == "area":
        slots["area"] = area_name(files, need.area, whole)
    else:
        slots["file"] = file_name(files, need.files[0], whole)
    return rng.choice(phrasings).format(**slots)


def need_answer(need: Need, state: Mapping[str, str]) -> str:
    """The answer to `need` as the files are now (the memory's answer and the subagent's report): the first line
    cites each file whole (`path:1-N`), then the definitions it holds with their lines."""
    rng = random.Random(need.key)
    cited = ", ".join(f"{p}:1-{max(1, len(state[p].splitlines()))}" for p in need.files)
    name = need.files[0] if need.kind != "area" else need.area
    lines = [_FIRST_LINES[need.kind].format(name=name, cited=cited, topic=need.topic, area=need.area + "/")]
    target = rng.randint(*ANSWER_CHARS) + ANSWER_CHARS_PER_FILE * len(need.files)
    points: list[str] = []
    for path in need.files:
        for sym in symbols_in(path, state[path])[:ANSWER_DEFINITIONS]:
            a, b = definition_range(path, state[path], sym)
            points.append(rng.choice(_POINTS).format(cite=f"{path}:{a}-{b}", sym=sym))
    size = len(lines[0])
    for point in points or [f"{need.files[0]} has no definitions; its text is the whole of it."]:
        lines.append("- " + point)
        size += len(point) + 3
    while size < target:
        filler = " ".join(rng.choice(_FILLER) for _ in range(12))
        lines.append(f"- Also: {filler}.")
        size += len(filler) + 10
    return "\n".join(lines)


def search_pattern(need: Need, files: Sequence[str]) -> str:
    """What an explorer searches for to find the files: the area's topic, or the file's name."""
    return rf"\b{need.topic}\b" if need.kind == "area" else file_name(files, need.files[0], False)
