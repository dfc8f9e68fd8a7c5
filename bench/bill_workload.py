"""The session-bill workload: real repositories and seeded task sequences (see bench/session_bill.py).

- `load_repo(name)`: a real repository as text (`live-memory`: this project's files at a pinned commit; `django`: the
  Django 5.1.4 sdist under bench/.cache, downloaded once with pip). Every text file is searchable; the files a
  task may need are the source/documentation files ("eligible").
- `build_tasks(repo, workload)`: the task sequence every arm replays. A task needs 0-4 files drawn with Zipf
  locality over directories (then over files inside a directory), from a pool filtered by size; it names
  symbols, and a file only beside a name defined in more than one file ("`Migration` (in path)", as an agent
  asking would say which it means), carries the Grep pattern an explorer would use, the decoy files opened while
  locating, the answer text (naming files with line ranges, the same for the memory and the subagent), the
  main agent's reply, and, for edit tasks, the one-line Edit applied to the first file.
- Nothing here imports the service: the workload is the same for any checkout of the server.
"""

from __future__ import annotations

import functools
import hashlib
import io
import random
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.bill_content import (
    CONTENT_KINDS,
    CONTENT_SHARE,
    FOLLOW_UP_MIN_GAP,
    FOLLOW_UP_SHARE,
    Need,
    draw_need,
    need_answer,
    question_for,
    search_pattern,
)
from bench.bill_outline import definition_range, symbols_in

HERE = Path(__file__).parent
CHECKOUT = HERE.parent
CACHE = HERE / ".cache"
# The commit of this project whose files are the "live-memory" workload repository (pinned: results stay
# comparable across changes to the code under test).
OWN_REV = "4bec8ff5f348ba70b6121ccf207ca89cbc12e173"
TEXT_SUFFIXES = frozenset(
    {".py", ".md", ".txt", ".rst", ".html", ".js", ".css", ".json", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".sh"}
)
MAX_TEXT_BYTES = 256 * 1024  # the hooks' tee cap: larger files are never held verbatim
MIN_ELIGIBLE_BYTES = 200
FILES_PER_TASK_WEIGHTS = (0.10, 0.35, 0.30, 0.15, 0.10)  # P(task needs 0, 1, 2, 3, 4 files)
SAME_DIR_SHARE = 0.6  # a task's further files come from the first file's directory this often
EDIT_SHARE = 0.3  # of the tasks that need files, this share edits the first one
DECOY_WEIGHTS = (0.4, 0.4, 0.2)  # P(0, 1, 2 decoy files opened while locating)
THINK_TIMES_S = (30.0, 120.0, 600.0)
THINK_WEIGHTS = (0.4, 0.4, 0.2)
ANSWER_CHARS = (700, 1300)
ANSWER_CHARS_PER_FILE = 220
REPLY_CHARS = (600, 1200)
LOCALITY_ZIPF = {"high": 1.4, "medium": 1.0, "low": 0.5}  # exponent over ranked directories and files
SIZE_CLASSES = ("small", "natural", "large")
SIZE_QUANTILE = 0.4  # small: the smallest 40% of eligible files; large: the largest 40%
ROTATIONS = 10  # a sequence's rotations start at each tenth of it: together every task sits in every decile
# Of the one-file questions that edit nothing, this share asks where a name is ("locate"): where it is defined,
# or, for USES_SHARE of them, who uses it ("uses"); the rest ask how it works ("explain"). Edit tasks ask which
# lines to change ("edit"); several files: how they fit together.
LOCATE_SHARE = 0.35
USES_SHARE = 0.4
USES_LISTED = 8  # the files a "uses" answer names; the rest are counted
QUESTION_KINDS = ("locate", "uses", "explain", "edit", *CONTENT_KINDS)

_IDENT = re.compile(r"[A-Za-z_]\w{3,}")


# -- repositories ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Repo:
    name: str
    root: Path  # the pristine checkout on disk (copied for the memory arm)
    files: dict[str, str]  # every searchable text file: relative path -> content
    eligible: tuple[str, ...]  # files a task may need (sorted)
    hits: dict[str, frozenset[str]] = field(repr=False)  # candidate symbol -> files that contain it as a word

    @functools.cached_property
    def defined(self) -> frozenset[str]:
        """The names the eligible files define (what an area's topic must not be)."""
        return frozenset(self.hits)

    def digest(self) -> str:
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode() + b"\0" + self.files[path].encode() + b"\0")
        return h.hexdigest()[:16]


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) > MAX_TEXT_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def own_repo(rev: str = "") -> Path:
    """This project's tracked files at a fixed commit (so the workload does not move with every change),
    exported once with `git archive` under bench/.cache."""
    rev = rev or OWN_REV
    target = CACHE / f"live-memory-{rev[:12]}"
    if (target / ".bench-ready").exists():
        return target
    try:
        archive = subprocess.run(
            ["git", "-C", str(CHECKOUT), "archive", "--format=tar", rev], capture_output=True, check=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise RuntimeError(
            f"cannot export commit {rev} of this checkout with git archive: {exc} {detail.decode(errors='replace')}"
        ) from exc
    # A staging folder of this process's own: parallel test workers may export the same commit at once.
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"live-memory-{rev[:12]}.", suffix=".partial", dir=CACHE))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(staging, filter="data")
        (staging / ".bench-ready").write_text(rev + "\n")
        try:
            staging.rename(target)
        except OSError:  # another process's export stands there already; a stale, unfinished one is replaced
            if not (target / ".bench-ready").exists():
                shutil.rmtree(target, ignore_errors=True)
                staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _tree_paths(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and p.name != ".bench-ready"
    )


@functools.lru_cache(maxsize=4)
def load_repo(name: str) -> Repo:
    """A real repository by name: `live-memory` (this checkout) or `django` (the 5.1.4 sdist)."""
    if name == "live-memory":
        root = own_repo()
        paths = _tree_paths(root)

        def eligible(p: str) -> bool:
            return p.endswith((".py", ".md"))
    elif name == "django":
        from bench.tools_bench import django_repo  # downloads the sdist with pip on first use

        try:
            root = django_repo()
        except Exception as exc:
            raise RuntimeError(f"the Django 5.1.4 sdist could not be prepared under bench/.cache: {exc!r}") from exc
        paths = _tree_paths(root)

        def eligible(p: str) -> bool:
            return p.startswith("django/") and p.endswith(".py")
    else:
        raise ValueError(f"unknown repository {name!r} (known: live-memory, django)")
    files: dict[str, str] = {}
    for rel in paths:
        if Path(rel).suffix not in TEXT_SUFFIXES:
            continue
        text = _read_text(root / rel)
        if text is not None:
            files[rel] = text
    pool = tuple(
        p
        for p in sorted(files)
        if eligible(p) and len(files[p].encode()) >= MIN_ELIGIBLE_BYTES and symbols_in(p, files[p])
    )
    if len(pool) < 20:
        raise RuntimeError(f"repository {name!r} at {root} has only {len(pool)} eligible files")
    wanted = {s for p in pool for s in symbols_in(p, files[p])}
    hits: dict[str, set[str]] = {}
    for path, text in files.items():
        for word in set(_IDENT.findall(text)) & wanted:
            hits.setdefault(word, set()).add(path)
    return Repo(name, root, files, pool, {k: frozenset(v) for k, v in hits.items()})


# -- workloads ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    name: str
    locality: str  # high | medium | low
    sizes: str  # small | natural | large
    sessions: tuple[int, ...]  # tasks per session
    variant: int = 0  # another task sequence of the same shape (its name, hence its seed, differs)
    rotation: int = 0  # the same tasks, started this many tenths of the way in (one session only)
    decoys: bool = True  # False: the control row, the same tasks with no decoy files opened while locating
    # True: a content row (decoy-free): the same draws, with CONTENT_SHARE of the questions that touch files
    # asking about the bodies of files instead (bench/bill_content.py)
    content: bool = False

    @property
    def sequence(self) -> str:
        """The name of the task sequence (a rotation keeps its sequence's tasks, hence its seed; so do the
        decoy-free control row and the content row)."""
        name = self.name.removesuffix(NO_DECOYS_SUFFIX).removesuffix(CONTENT_SUFFIX)
        return name.removesuffix(f"-r{self.rotation}") if self.rotation else name

    @property
    def tasks(self) -> int:
        return sum(self.sessions)

    @property
    def shape(self) -> str:
        if len(self.sessions) == 1:
            return f"{self.sessions[0]} tasks"
        return f"{len(self.sessions)} x {self.sessions[0]} tasks"


NO_DECOYS_SUFFIX = "-nodecoy"
CONTENT_SUFFIX = "-content"


def workload(
    locality: str,
    sizes: str,
    sessions: Sequence[int],
    variant: int = 0,
    rotation: int = 0,
    decoys: bool = True,
    content: bool = False,
) -> Workload:
    """A workload by its shape; a content row is decoy-free (`decoys` is then ignored)."""
    bad_rotation = rotation < 0 or rotation >= ROTATIONS or (rotation and len(sessions) != 1)
    if locality not in LOCALITY_ZIPF or sizes not in SIZE_CLASSES or not sessions or variant < 0 or bad_rotation:
        raise ValueError(f"bad workload {locality}/{sizes}/{sessions}/{variant}/{rotation}")
    shape = str(sessions[0]) if len(sessions) == 1 else f"{len(sessions)}x{sessions[0]}"
    suffix = (f"-v{variant}" if variant else "") + (f"-r{rotation}" if rotation else "")
    decoys = decoys and not content
    suffix += CONTENT_SUFFIX if content else "" if decoys else NO_DECOYS_SUFFIX
    name = f"{locality}-{sizes}-{shape}{suffix}"
    return Workload(name, locality, sizes, tuple(sessions), variant, rotation, decoys, content)


@dataclass(frozen=True)
class Task:
    index: int
    session: int
    think_s: float  # user think time before the task (the first task of a later session: the session gap)
    text: str  # the user's request
    question: str  # what the memory is asked / the subagent is told (unique per task)
    files: tuple[str, ...]  # files the task needs
    pattern: str  # the Grep pattern an explorer uses to locate them
    grep_hits: tuple[str, ...]  # files containing the pattern (Claude Code's files_with_matches)
    decoys: tuple[str, ...]  # files opened while locating that turn out not to matter
    answer: str  # the memory's answer / the subagent's report
    reply: str  # the main agent's final reply to the user
    edit: EditOp | None = None
    symbols: tuple[str, ...] = ()  # the name asked about in each needed file (same order as `files`)
    kind: str = "chat"  # locate | uses | explain | edit | walkthrough | review | area | follow-up | chat (no files)
    named: tuple[str, ...] = ()  # needed files the question names (their name is defined in other files too)
    need: Need | None = None  # a content question's need: the whole current bytes of `files` (bill_content.py)


def _defined_in_files(repo: Repo, name: str, known: dict[str, int]) -> int:
    """How many of the repository's files define `name` (as the bench outlines a file), remembered in `known`."""
    if name not in known:
        # A cheap look for the definition line first: outlining a file (symbols_in) tokenizes it.
        line = re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", re.MULTILINE)
        files = [p for p in repo.hits.get(name, ()) if p in repo.files]
        maybe = [p for p in files if p.endswith(".md") or line.search(repo.files[p])]
        known[name] = sum(1 for p in maybe if name in symbols_in(p, repo.files[p]))
    return known[name]


def with_files(text: str, files: Sequence[str], symbols: Sequence[str], named: Sequence[str]) -> str:
    """`text` with each quoted name of a named file followed by that file: "`Migration` (in path)", the n-th
    quote of a name for its n-th file."""
    cursor: dict[str, int] = {}
    for path, sym in zip(files, symbols, strict=True):
        quoted = f"`{sym}`"
        at = text.find(quoted, cursor.get(sym, 0))
        if at < 0:
            continue
        end = at + len(quoted)
        if path in named:
            text = f"{text[:end]} (in {path}){text[end:]}"
            end += len(f" (in {path})")
        cursor[sym] = end
    return text


def _zipf_pick(rng: random.Random, items: Sequence[str], s: float, exclude: Iterable[str] = ()) -> str | None:
    banned = set(exclude)
    choices = [(item, 1.0 / (rank + 1) ** s) for rank, item in enumerate(items) if item not in banned]
    if not choices:
        return None
    return rng.choices([c[0] for c in choices], [c[1] for c in choices])[0]


def _size_pool(repo: Repo, sizes: str) -> list[str]:
    pool = list(repo.eligible)
    if sizes == "natural":
        return pool
    ranked = sorted(pool, key=lambda p: (len(repo.files[p].encode()), p))
    cut = max(20, int(len(ranked) * SIZE_QUANTILE))
    return sorted(ranked[:cut] if sizes == "small" else ranked[-cut:])


_ANSWER_SENTENCES = (
    "`{sym}` ({path}:{a}-{b}) is the entry point; callers reach it through the module's public names.",
    "{path}:{a}-{b} defines `{sym}`; it keeps its state on the instance and validates input first.",
    "The work happens in `{sym}` at {path}:{a}-{b}; errors surface as the exceptions raised there.",
    "To change this behaviour, edit `{sym}` ({path}:{a}-{b}); nothing else overrides it.",
    "`{sym}` in {path}:{a}-{b} is called from the surrounding module and depends on its helpers.",
)
_QUESTIONS = (
    "How does `{sym}` work, and what calls it?",
    "Where is `{sym}` handled, and what does it depend on?",
    "What happens when `{sym}` fails, and where is that handled?",
    "Walk me through `{sym}` step by step.",
    "What does `{sym}` do, and is there anything surprising in it?",
)
_LOCATE_QUESTIONS = (
    "Where is `{sym}` defined?",
    "Which file and lines define `{sym}`?",
    "Find the definition of `{sym}`.",
)
_USES_QUESTIONS = (
    "Who calls `{sym}`?",
    "Which files use `{sym}`?",
    "Where is `{sym}` used?",
)
_MULTI_QUESTIONS = (
    "How do {syms} fit together?",
    "Trace the flow through {syms}.",
    "What is the relationship between {syms}?",
)
_EDIT_TEXTS = (
    "Add a short comment above `{sym}` explaining what it is for.",
    "Document the contract of `{sym}` with a one-line comment.",
)
_CHAT_TEXTS = (
    "Thanks. Summarise what we have established so far, briefly.",
    "Good. What would you look at next, and why?",
    "Can you restate the plan in three bullet points?",
)


def _filler(rng: random.Random, words: Sequence[str], target: int) -> str:
    out: list[str] = []
    size = 0
    vocabulary = (
        "the",
        "call",
        "path",
        "value",
        "check",
        "returns",
        "when",
        "handler",
        "state",
        "then",
        "module",
        "test",
        "config",
        "error",
        "request",
    )
    while size < target:
        word = rng.choice(words) if words and rng.random() < 0.15 else rng.choice(vocabulary)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _answer(rng: random.Random, repo: Repo, files: Sequence[str], symbols: Sequence[str]) -> str:
    """~180-450 tokens naming every file with a line range (the memory's answer, the subagent's report)."""
    target = rng.randint(*ANSWER_CHARS) + ANSWER_CHARS_PER_FILE * len(files)
    ranges = [(p, s, *definition_range(p, repo.files[p], s)) for p, s in zip(files, symbols, strict=True)]
    lines = ["Short answer: " + "; ".join(f"`{s}` is in {p}:{a}-{b}" for p, s, a, b in ranges) + "."]
    size = len(lines[0])
    while size < target:
        path, sym, a, b = rng.choice(ranges)
        sentence = "- " + rng.choice(_ANSWER_SENTENCES).format(sym=sym, path=path, a=a, b=b)
        if rng.random() < 0.5:
            sentence += " " + _filler(rng, list(symbols), 80)
        lines.append(sentence)
        size += len(sentence) + 1
    return "\n".join(lines)


def _locate_answer(repo: Repo, path: str, symbol: str) -> str:
    """A locate question's answer: the file, the line range and the definition's first line."""
    text = repo.files[path]
    a, b = definition_range(path, text, symbol)
    first = text.splitlines()[a - 1].strip() if text.splitlines() else ""
    return f"`{symbol}` is defined in {path}:{a}-{b}: `{first[:100]}`."


def _uses_answer(repo: Repo, path: str, symbol: str, hits: Sequence[str]) -> str:
    """A "who uses it" question's answer: where the name is defined, and the other files that name it (a
    search's files)."""
    a, b = definition_range(path, repo.files[path], symbol)
    users = [hit for hit in hits if hit != path]
    if not users:
        return f"`{symbol}` is defined in {path}:{a}-{b}; no other file uses it."
    more = f" and {len(users) - USES_LISTED} more" if len(users) > USES_LISTED else ""
    return f"`{symbol}` is defined in {path}:{a}-{b}; it is used in {', '.join(users[:USES_LISTED])}{more}."


@dataclass(frozen=True)
class EditOp:
    """A Claude Code Edit call: in `path`, `old` (old_string) becomes `new` (new_string)."""

    path: str
    old: str
    new: str


def _edit_op(text: str, path: str, symbol: str, index: int) -> EditOp:
    lines = text.splitlines(keepends=True)
    start, _ = definition_range(path, text, symbol)
    line = lines[start - 1] if lines else "\n"
    if text.count(line) != 1 or not line.strip():
        line = next((candidate for candidate in lines if candidate.strip() and text.count(candidate) == 1), line)
    indent = line[: len(line) - len(line.lstrip())]
    comment = "<!-- " if path.endswith(".md") else "# "
    tail = " -->" if path.endswith(".md") else ""
    added = f"{indent}{comment}{symbol}: reviewed in task {index + 1}{tail}\n"
    return EditOp(path, line, added + line)


def apply_edit(text: str, op: EditOp) -> str:
    """The file after the Edit (the first occurrence of old_string replaced)."""
    if op.old not in text:
        return text + op.new  # an earlier edit moved the line: append instead (same in every arm)
    return text.replace(op.old, op.new, 1)


def build_tasks(repo: Repo, load: Workload, seed: int) -> list[Task]:
    """The deterministic task sequence of one workload (seeded by its sequence and the repository). A rotation
    keeps the sequence's tasks and starts them a tenth of the way in per step; the edits are then worked out
    again in the new order (each against the file as the earlier edits left it)."""
    drafts = _draft_tasks(repo, load, seed)
    cut = len(drafts) * load.rotation // ROTATIONS
    drafts = drafts[cut:] + drafts[:cut]
    state = {p: repo.files[p] for p in repo.files}  # the edits change files as the session goes
    tasks: list[Task] = []
    for index, (draft, edit_symbol) in enumerate(drafts):
        answer = need_answer(draft.need, state) if draft.need else _current_ranges(draft, repo, state)
        edit = None
        if edit_symbol is not None:
            path = draft.files[0]
            edit = _edit_op(state[path], path, edit_symbol, index)
            state[path] = apply_edit(state[path], edit)
        tasks.append(replace(draft, index=index, edit=edit, answer=answer))
    return tasks


def _current_ranges(task: Task, repo: Repo, state: dict[str, str]) -> str:
    """The task's answer with each definition's lines as the file has them when the task is asked (the
    edits of earlier tasks move them): an answer cites the code as it is."""
    answer = task.answer
    for path, symbol in zip(task.files, task.symbols, strict=True):
        a, b = definition_range(path, repo.files[path], symbol)
        c, d = definition_range(path, state[path], symbol)
        if (a, b) != (c, d):
            answer = answer.replace(f"{path}:{a}-{b}", f"{path}:{c}-{d}")
    return answer


def _draft_tasks(repo: Repo, load: Workload, seed: int) -> list[tuple[Task, str | None]]:
    """The sequence's tasks in their own order, without their edits: each with the symbol its edit changes."""
    rng = random.Random(f"{seed}:{repo.name}:{load.sequence}")
    pool = _size_pool(repo, load.sizes)
    by_dir: dict[str, list[str]] = {}
    for path in pool:
        by_dir.setdefault(str(Path(path).parent), []).append(path)
    directories = sorted(by_dir)
    rng.shuffle(directories)  # popularity rank is random, not alphabetical
    for members in by_dir.values():
        rng.shuffle(members)
    s = LOCALITY_ZIPF[load.locality]
    readable = [p for p in repo.files if len(repo.files[p].encode()) >= MIN_ELIGIBLE_BYTES]
    drafts: list[tuple[Task, str | None]] = []
    seen_questions: set[str] = set()
    definers: dict[str, int] = {}  # name -> how many files define it
    asked: list[_Asked] = []  # content needs asked so far (a follow-up asks one again)
    index = 0
    for session, count in enumerate(load.sessions):
        for k in range(count):
            think = 3600.0 if (session and k == 0) else rng.choices(THINK_TIMES_S, THINK_WEIGHTS)[0]
            n = rng.choices(range(len(FILES_PER_TASK_WEIGHTS)), FILES_PER_TASK_WEIGHTS)[0]
            chosen: list[str] = []
            while len(chosen) < n:
                home = str(Path(chosen[0]).parent) if chosen else None
                if home is not None and rng.random() < SAME_DIR_SHARE:
                    pick = _zipf_pick(rng, by_dir[home], s, chosen)
                else:
                    pick = None
                if pick is None:
                    directory = _zipf_pick(rng, directories, s)
                    assert directory is not None
                    pick = _zipf_pick(rng, by_dir[directory], s, chosen)
                if pick is not None:
                    chosen.append(pick)
            files = tuple(chosen)
            symbols: list[str] = []
            for path in files:
                names = symbols_in(path, repo.files[path])
                rarest = min(len(repo.hits.get(name, ())) or 10**6 for name in names)
                candidates = [name for name in names if (len(repo.hits.get(name, ())) or 10**6) == rarest]
                symbols.append(rng.choice(candidates))
            pattern = "|".join(rf"\b{re.escape(sym)}\b" for sym in symbols)
            hits = tuple(sorted(set().union(*(repo.hits.get(sym, frozenset()) for sym in symbols)))) if files else ()
            decoys: tuple[str, ...] = ()
            if files:
                wanted = rng.choices(range(len(DECOY_WEIGHTS)), DECOY_WEIGHTS)[0]
                homes = {str(Path(p).parent) for p in files}
                others = [h for h in hits if h not in files and h in readable]
                others.sort(key=lambda h: (str(Path(h).parent) not in homes, h))
                siblings = [p for h in sorted(homes) for p in sorted(by_dir.get(h, [])) if p not in files]
                candidates = list(dict.fromkeys(others[:6] + siblings))
                decoys = tuple(rng.sample(candidates, min(wanted, len(candidates))))
            if not load.decoys:
                decoys = ()  # the control row: the same draws, no decoy opened
            # A name defined in several files is asked about with the file meant, as an agent asking would.
            named = tuple(
                p for p, sym in zip(files, symbols, strict=True) if _defined_in_files(repo, sym, definers) > 1
            )
            edit_symbol: str | None = None
            answer = reply = ""
            kind = "chat"
            # A draw of its own, so the kinds leave every other draw of the sequence as it was.
            locate = random.Random(f"{seed}:{repo.name}:{load.sequence}:kind:{index}").random() < LOCATE_SHARE
            uses = random.Random(f"{seed}:{repo.name}:{load.sequence}:uses:{index}").random() < USES_SHARE
            if not files:
                text = rng.choice(_CHAT_TEXTS)
                question = ""
            else:
                quoted = [f"`{sym}`" for sym in symbols]
                kind = "explain"
                if rng.random() < EDIT_SHARE:
                    kind = "edit"
                    text = rng.choice(_EDIT_TEXTS).format(sym=symbols[0])
                    if len(files) > 1:
                        text += f" Keep {', '.join(quoted[1:])} in mind."
                    base = f"Where is `{symbols[0]}` defined, and what should I know before changing it"
                    base += f" (related: {', '.join(quoted[1:])})?" if len(files) > 1 else "?"
                    edit_symbol = symbols[0]
                elif len(files) == 1:
                    text = base = rng.choice(_QUESTIONS).format(sym=symbols[0])
                    if locate:
                        kind = "uses" if uses else "locate"
                        phrasings = _USES_QUESTIONS if uses else _LOCATE_QUESTIONS
                        text = base = phrasings[index % len(phrasings)].format(sym=symbols[0])
                else:
                    text = base = rng.choice(_MULTI_QUESTIONS).format(
                        syms=", ".join(quoted[:-1]) + " and " + quoted[-1]
                    )
                base = with_files(base, files, symbols, named)
                text = with_files(text, files, symbols, named)
                question = base
                attempt = 1
                while question in seen_questions:
                    attempt += 1
                    question = f"{base} (follow-up {attempt})"
                seen_questions.add(question)
                if edit_symbol is None:
                    text = question
                answer = _answer(rng, repo, files, symbols)  # drawn for every kind: the draws stay in step
                if kind == "locate":
                    answer = _locate_answer(repo, files[0], symbols[0])
                elif kind == "uses":
                    answer = _uses_answer(repo, files[0], symbols[0], hits)
            reply = "Here is what I found. " + _filler(rng, list(symbols) + list(files), rng.randint(*REPLY_CHARS))
            draft = Task(
                index,
                session,
                think,
                text,
                question,
                files,
                pattern,
                hits,
                decoys,
                answer,
                reply,
                symbols=tuple(symbols),
                kind=kind,
                named=named,
            )
            if load.content and files and edit_symbol is None:
                draft = _as_content(draft, repo, load, seed, asked, seen_questions)
            drafts.append((draft, edit_symbol))
            index += 1
    return drafts


@dataclass(frozen=True)
class _Asked:
    """A content need asked earlier in the sequence, and how."""

    index: int
    session: int
    need: Need


def _as_content(draft: Task, repo: Repo, load: Workload, seed: int, asked: list[_Asked], seen: set[str]) -> Task:
    """`draft` (a question that edits nothing), or, for CONTENT_SHARE of the questions touching files, a content
    question in its place: a new need about its first file or that file's directory, or an earlier need asked
    again. A draw of its own, so every other draw of the sequence stays as it was."""
    rng = random.Random(f"{seed}:{repo.name}:{load.sequence}:content:{draft.index}")
    if rng.random() >= CONTENT_SHARE / (1 - EDIT_SHARE):
        return draft
    old = {a.need.key: a.need for a in asked if a.session < draft.session or draft.index - a.index >= FOLLOW_UP_MIN_GAP}
    paths = sorted(repo.files)
    if old and rng.random() < FOLLOW_UP_SHARE:
        need = rng.choice(sorted(old.values(), key=lambda n: n.key))
    else:
        need = draw_need(rng, repo.files, draft.files[0], repo.defined)
        if any(a.need == need for a in asked) and need.key not in old:
            return draft  # the same need asked just before: the question stays as it was
    follow_up = any(a.need == need for a in asked)
    base = question_for(rng, need, paths, follow_up=follow_up)
    if not follow_up:
        asked.append(_Asked(draft.index, draft.session, need))
    question, attempt = base, 1
    while question in seen:
        attempt += 1
        question = f"{base} (follow-up {attempt})"
    seen.add(question)
    named = tuple(p for p in need.files if f"`{p}`" in question)
    return replace(
        draft,
        text=question,
        question=question,
        files=need.files,
        pattern=search_pattern(need, paths),
        grep_hits=need.files,
        decoys=(),
        symbols=(),
        kind="follow-up" if follow_up else need.kind,
        named=named,
        need=need,
    )
