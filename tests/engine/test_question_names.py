"""The names a question mentions (backticked names first, then identifiers shaped like code), which
find_symbol answers are worth putting in the question's hint (only those that found a definition or a use),
and which questions ask only where a name is (their hint gives locations, not code)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from live_memory import constants as C
from live_memory.constants import QUESTION_NAMES_MAX, SYMBOL_NAME_MAX_CHARS
from live_memory.core import prompts
from live_memory.core.messages import ChatRequest, ChatResponse, TextPart
from live_memory.engine.question_names import found_definitions, location_kind, names_in, paths_in
from live_memory.memory.context_window import ContextWindow
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.tools import Toolbox, ToolLimits
from live_memory.tools.context import find_ripgrep
from tests.engine.test_agent_loop import loop_for
from tests.fakes.engine import engine_for
from tests.fakes.repo_builder import one_file_repo


# -- names_in ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("Where is `build_prompt` defined?", ["build_prompt"]),
        ("How does `ContextWindow.freeze` work?", ["ContextWindow.freeze"]),
        ("What does `foo()` return?", ["foo"]),
        ("Who calls `Card.render()`?", ["Card.render"]),
        ("Is `retry` still used?", ["retry"]),
        ("Is `$scope` bound here?", ["$scope"]),
    ],
)
def test_a_backticked_name_is_taken_whole_without_call_parentheses(question: str, names: list[str]) -> None:
    assert names_in(question) == names


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What does parse_config return?", ["parse_config"]),
        ("Where is MAX_RETRIES set?", ["MAX_RETRIES"]),
        ("What is __init__ for?", ["__init__"]),
        ("Who calls getUserName?", ["getUserName"]),
        ("What does HttpClient wrap?", ["HttpClient"]),
    ],
)
def test_an_unquoted_identifier_shaped_like_code_is_taken(question: str, names: list[str]) -> None:
    assert names_in(question) == names


def test_plain_english_words_are_not_taken_for_names() -> None:
    question = "Where is Python used? What about the README, JSON output and the Retry policy of this Service?"
    assert names_in(question) == []


def test_names_of_two_characters_or_fewer_are_ignored() -> None:
    assert names_in("Are `ab`, `x`, `io()` and a_ used with x_y?") == ["x_y"]


def test_backticked_names_come_first_then_the_shaped_ones_in_question_order() -> None:
    question = "Does parse_config call getUserName, and does `retry` wrap `Card.render`?"
    assert names_in(question) == ["retry", "Card.render", "parse_config", "getUserName"]


def test_a_name_mentioned_several_times_is_taken_once() -> None:
    question = "Is `retry_later` the same retry_later that `retry_later()` calls? And retry_later?"
    assert names_in(question) == ["retry_later"]


def test_at_most_the_limit_is_taken_and_the_default_limit_is_the_configured_one() -> None:
    question = " ".join(f"name_{i}" for i in range(QUESTION_NAMES_MAX + 3))
    assert names_in(question, 2) == ["name_0", "name_1"]
    assert names_in(question, 0) == []
    assert names_in(question) == [f"name_{i}" for i in range(QUESTION_NAMES_MAX)]


def test_paths_and_hyphenated_words_are_not_names() -> None:
    question = "What is in src/live_memory/app_config.py and docs/how_to.md, and the well-known_default?"
    assert names_in(question) == []


def test_backticked_text_that_is_no_identifier_is_not_a_name() -> None:
    assert names_in("Does `rm -rf /` or `a == b` or `42abc` or `foo.` run?") == []


# -- location_kind ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Where is `build_prompt` defined?", "definition"),
        ("Which file and lines define `WKBReader`?", "definition"),
        ("Find the definition of `get_contenttypes_and_models`.", "definition"),
        ("Where is `Migration` (in app/migrations/0002_auto.py) defined?", "definition"),
        ("In which file is the class HttpClient defined", "definition"),
        ("where are retry_later, backoff and `jitter` declared?", "definition"),
        ("Where is MAX_RETRIES set?", "definition"),
        ("Where does `Card` live?", "definition"),
        ("Who calls `Card.render()`?", "both"),
        ("Which files use parse_config?", "both"),
        ("Where is `load` used?", "both"),
        ("Find all callers of `load`", "both"),
    ],
)
def test_a_question_that_asks_only_where_a_name_is_is_a_location_question(question: str, kind: str) -> None:
    assert location_kind(question) == kind


@pytest.mark.parametrize(
    "question",
    [
        "How does `ContextWindow.freeze` work?",
        "Where is `reset_queries` defined, and what should I know before changing it?",
        "Where is `load` defined? I want to change it.",
        "Where is `X` used and how is it defined?",
        "Where is load defined and why?",
        "What does `Card.render` return?",
        "Where is the retry logic and how does it back off defined?",
    ],
)
def test_a_question_that_asks_more_than_a_location_is_not_one(question: str) -> None:
    assert location_kind(question) is None


# -- paths_in ---------------------------------------------------------------------------------------
def test_the_paths_a_question_names_are_taken_in_order_each_once() -> None:
    question = (
        "How do `Migration` (in app/migrations/0002_auto.py) and ./settings.py relate? See app/models.py:40-58 "
        "and app/migrations/0002_auto.py again."
    )
    assert paths_in(question) == ["app/migrations/0002_auto.py", "settings.py", "app/models.py"]
    assert paths_in("Where is `build_prompt` defined?") == []


async def test_a_name_defined_in_many_files_comes_with_the_code_of_the_one_the_question_names(
    tmp_path: Path,
) -> None:
    for n in range(C.SYMBOL_CODE_MAX_DEFINITIONS + 2):
        (tmp_path / "migrations").mkdir(exist_ok=True)
        (tmp_path / "migrations" / f"m{n}.py").write_text(f"class Migration:\n    number = {n}\n")
    provider = ScriptedProvider(text_response("It sets number 3."))
    await (await loop_for(tmp_path, provider)).answer(
        ContextWindow(budget_tokens=100_000), "What does `Migration` (in migrations/m3.py) set?"
    )
    hint = provider.requests[0].messages[-1].parts[-1]
    assert isinstance(hint, TextPart) and "2\t    number = 3" in hint.text and "number = 0" not in hint.text


# -- found_definitions --------------------------------------------------------------------------------
def test_an_answer_that_found_a_definition_is_kept_without_its_surrounding_blank_space() -> None:
    text = "Definitions of 'load' (symbol index; Read a range to see the code):\nmodels.py:6-7  load (function)\n"
    assert found_definitions("\n" + text, is_error=False) == text.strip()


def test_an_answer_that_found_no_definition_but_files_using_the_name_is_kept() -> None:
    text = "No definition of 'load' found (workspace scan).\nUsed in 1 file:\napp.py"
    assert found_definitions(text, is_error=False) == text


@pytest.mark.parametrize(
    ("text", "is_error"),
    [
        ("No definition of 'load' found (workspace scan).", False),
        ("No definition of 'load' found (workspace scan).\nNo file uses 'load' (workspace scan).", False),
        ("find_symbol: 'name' must be one line of 1 to 200 characters", True),
        ("Definitions of 'load' (symbol index; ...):\nmodels.py:6-7", True),  # an error wins over its text
        ("", False),
        ("  \n ", False),
    ],
    ids=["no-definition", "no-definition-or-use", "error", "error-with-text", "empty", "blank"],
)
def test_an_answer_without_a_definition_or_an_error_is_dropped(text: str, is_error: bool) -> None:
    assert found_definitions(text, is_error) is None


@pytest.fixture
def scan() -> None:
    """find_symbol's workspace scan (no symbol index here) runs ripgrep."""
    if find_ripgrep(ToolLimits()) is None:
        pytest.skip("ripgrep is not installed (the `ripgrep` wheel provides it): find_symbol cannot scan")


MODELS = "class Card:\n    def render(self) -> str:\n        return ''\n\n\ndef load(path):\n    return Card()\n"


async def find_definition(root: Path, name: str) -> str | None:
    """find_symbol's real answer for the definitions of `name`, filtered as the question loop filters it."""
    box = await Toolbox.create(root)
    outcome = await box.run("find_symbol", {"name": name, "kind": "definition"})
    return found_definitions(outcome.text, outcome.is_error)


@pytest.mark.usefixtures("scan")
async def test_find_symbols_real_answers_are_kept_only_when_they_name_a_definition(tmp_path: Path) -> None:
    root = one_file_repo(tmp_path, "models.py", MODELS)
    found = await find_definition(root, "Card.render")
    assert found is not None and "models.py:2-3  Card.render (method)" in found
    assert await find_definition(root, "nowhere_defined") is None
    assert await find_definition(root, "x" * (SYMBOL_NAME_MAX_CHARS + 1)) is None  # refused: an error


# -- end to end ------------------------------------------------------------------------------------
def echo_definition(request: ChatRequest) -> ChatResponse:
    """A model that answers a "where" question from the hint at once (no tool call), or says it cannot."""
    hint = request.messages[-1].text
    if prompts.DEFINITIONS_HEADING not in hint:
        return text_response("not in the hint")
    definitions = hint.split(prompts.DEFINITIONS_HEADING + "\n", 1)[1].splitlines()
    first_definition = next(line for line in definitions if re.match(r"(### )?\S+:\d+-\d+ ", line))
    return text_response(f"Defined at {first_definition.removeprefix('### ').split()[0]}")


async def hint_for(root: Path, question: str) -> str:
    """The hint the memory's model gets with `question` (its first request's last part)."""
    provider = ScriptedProvider(text_response("noted"))
    await (await loop_for(root, provider)).answer(ContextWindow(budget_tokens=100_000), question)
    hint = provider.requests[0].messages[-1].parts[-1]
    assert isinstance(hint, TextPart)
    return hint.text


@pytest.mark.usefixtures("scan")
async def test_a_where_question_gets_the_location_and_signature_and_a_how_question_the_code(tmp_path: Path) -> None:
    root = one_file_repo(tmp_path, "models.py", MODELS)
    where = await hint_for(root, "Where is `load` defined?")
    assert "models.py:6-7  load (function)  def load(path)" in where
    assert "return Card()" not in where  # the answer is a location: no code paid for
    how = await hint_for(root, "How does `load` work?")
    assert "### models.py:6-7  load (function)" in how and "7\t    return Card()" in how


@pytest.mark.usefixtures("scan")
async def test_a_who_calls_question_gets_the_files_that_use_the_name(tmp_path: Path) -> None:
    root = one_file_repo(tmp_path, "models.py", MODELS)
    (root / "views.py").write_text("from models import load\n\n\ndef show():\n    return load('x')\n")
    hint = await hint_for(root, "Who calls `load`?")
    assert "models.py:6-7  load (function)" in hint and "Used in 1 file:\nviews.py" in hint
    assert "return Card()" not in hint


@pytest.mark.usefixtures("scan")
async def test_a_where_question_is_answered_with_one_model_request_through_the_answerer(tmp_path: Path) -> None:
    root = one_file_repo(tmp_path, "models.py", MODELS)
    provider = ScriptedProvider(responder=echo_definition)
    result = await engine_for(tmp_path, provider).answerer.ask(str(root), "Where is `load` defined?")
    [request] = provider.requests
    assert "models.py:6-7  load (function)" in request.messages[-1].text
    assert result.answer == "Defined at models.py:6-7" and result.tool_calls == 0
