"""The files a question asks about as a whole, read before the model sees it (pre_read.py): the file it names, or
the files under a directory it names that mention its words, presented as a tool round already made; never for a
question about a code name or about where something is, never a held file, never past the caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from live_memory.core import prompts
from live_memory.core.messages import ChatRequest, Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.memory.context_window import ContextWindow
from live_memory.outline.workspace_paths import WorkspacePaths
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.engine.test_agent_loop import loop_for

STORE = '"""Keeps the store: a snapshot per workspace."""\n\n\ndef load():\n    return 1\n'
FILES = {
    "src/store.py": STORE,
    "src/auth/session.py": "# a session expires after an hour\nTTL = 3600\n",
    "src/auth/tokens.py": "# tokens outlive a session\nKEY = 1\n",
    "src/auth/users.py": "NAMES = []\n",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def window() -> ContextWindow:
    made = ContextWindow(budget_tokens=100_000)
    made.set_directory_tree("src/ (4 files)", WorkspacePaths(FILES))
    return made


def round_made(request: ChatRequest) -> tuple[list[str], dict[str, str]]:
    """The Read calls of the round the loop made ahead, and each result's text by call id."""
    calls = [p for m in request.messages for p in m.parts if isinstance(p, ToolUsePart)]
    results = {p.tool_use_id: p.content for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)}
    return [str(c.input["file_path"]) for c in calls if c.name == "Read"], {c.id: results[c.id] for c in calls}


def hint(request: ChatRequest) -> str:
    last = request.messages[-1].parts[-1]
    assert isinstance(last, TextPart) and last.text.startswith(prompts.HINT_HEADING)
    return last.text


async def test_a_file_asked_about_as_a_whole_is_read_before_the_first_request(root: Path) -> None:
    provider = ScriptedProvider(text_response("src/store.py:1-5 keeps the store."))
    held = window()
    out = await (await loop_for(root, provider, pre_read_chars=40_000)).answer(held, "Walk me through `store.py`.")
    assert len(provider.requests) == 1 and out.answer.startswith("src/store.py:1-5")
    paths, results = round_made(provider.requests[0])
    assert paths == ["src/store.py"]
    assert '1\t"""Keeps the store' in next(iter(results.values()))  # numbered lines, as Read returns them
    assert out.files_read == ["src/store.py"] and out.tool_calls == 0  # the model made no call
    assert held.files["src/store.py"].state == "current"  # known as read: what is learned rests on it


async def test_a_directory_s_files_that_mention_the_question_s_words_are_read(root: Path) -> None:
    provider = ScriptedProvider(text_response("sessions expire in src/auth/session.py:1-2."))
    loop = await loop_for(root, provider, pre_read_chars=40_000)
    await loop.answer(window(), "How is session expiry handled in `auth/`?")
    assert round_made(provider.requests[0])[0] == ["src/auth/session.py"]  # "session" and "expiry": one file


async def test_too_many_matching_files_are_named_in_the_hint_for_the_model_to_choose(root: Path) -> None:
    provider = ScriptedProvider(text_response("ok"))
    loop = await loop_for(root, provider, pre_read_chars=40_000)
    await loop.answer(window(), "Which files under `auth/` deal with sessions?")  # two files: more than one
    assert round_made(provider.requests[0])[0] == ["src/auth/session.py", "src/auth/tokens.py"]
    provider = ScriptedProvider(text_response("ok"))
    loop = await loop_for(root, provider, pre_read_chars=10)  # too long to read ahead
    await loop.answer(window(), "Which files under `auth/` deal with sessions?")
    assert round_made(provider.requests[0])[0] == []
    assert "Under src/auth/, mentioning sessions: src/auth/session.py, src/auth/tokens.py" in hint(provider.requests[0])
    provider = ScriptedProvider(text_response("ok"))
    loop = await loop_for(root, provider, pre_read_chars=10)
    await loop.answer(window(), "Walk me through `store.py`.")
    told = hint(provider.requests[0])  # too long to read ahead: what it holds, for the model to read what it needs
    assert "### src/store.py (5 lines): what it holds\nKeeps the store: a snapshot per workspace." in told
    assert "- def load()  4-5" in told


@pytest.mark.parametrize(
    "question",
    [
        "How does `load` in `store.py` work?",  # a code name: its definition is looked up instead
        "Where is `load` (in store.py) defined?",  # where something is, not what is in it
        "What does `nowhere.py` do?",  # no such file
    ],
)
async def test_a_question_not_about_a_file_as_a_whole_reads_nothing_ahead(root: Path, question: str) -> None:
    provider = ScriptedProvider(text_response("ok"))
    await (await loop_for(root, provider, pre_read_chars=40_000)).answer(window(), question)
    assert round_made(provider.requests[0])[0] == []


async def test_a_file_the_window_holds_as_it_is_is_not_read_again_and_off_reads_nothing(root: Path) -> None:
    held = window()
    held.observe("src/store.py", STORE, "sha-of-store")
    provider = ScriptedProvider(text_response("ok"))
    await (await loop_for(root, provider, pre_read_chars=40_000)).answer(held, "Walk me through `store.py`.")
    assert round_made(provider.requests[0])[0] == []
    provider = ScriptedProvider(text_response("ok"))
    await (await loop_for(root, provider, pre_read_chars=0)).answer(window(), "Walk me through `store.py`.")
    assert round_made(provider.requests[0])[0] == []


async def test_the_round_made_ahead_is_a_valid_turn_pair_with_unique_call_ids(root: Path) -> None:
    provider = ScriptedProvider(text_response("one"), text_response("two"))
    held = window()
    loop = await loop_for(root, provider, pre_read_chars=40_000)
    await loop.answer(held, "Walk me through `store.py`.")
    held.shed_content("src/store.py")
    await (await loop_for(root, provider, pre_read_chars=40_000)).answer(held, "Review `store.py` for naming.")
    messages: tuple[Message, ...] = provider.requests[1].messages
    # The first exchange, then the question, the calls made ahead and their results.
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    first = [p.id for p in provider.requests[0].messages[1].parts if isinstance(p, ToolUsePart)]
    second = [p.id for p in messages[3].parts if isinstance(p, ToolUsePart)]
    assert len(first) == len(second) == 1 and first != second  # ids stay unique in a history that keeps them


async def test_a_directory_asked_about_as_a_whole_lists_what_each_of_its_files_says_it_is(root: Path) -> None:
    provider = ScriptedProvider(text_response("ok"))
    await (await loop_for(root, provider, pre_read_chars=40_000)).answer(window(), "What is `src/` for?")
    told = hint(provider.requests[0])
    assert "### src/ (4 files): what its files say they are" in told
    assert "- src/store.py: Keeps the store: a snapshot per workspace." in told
    assert "- src/auth/session.py\n" in told  # no docstring: named alone
    assert round_made(provider.requests[0])[0] == []  # nothing read whole
