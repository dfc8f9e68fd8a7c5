"""The symbol index: cards by path; definitions by bare, qualified or partly qualified name; the files
that use a name; replace and remove; a plain-JSON round trip."""

from __future__ import annotations

import json

import pytest

from live_memory.outline.cards import build_card
from live_memory.outline.symbol_index import SymbolHit, SymbolIndex

_MODELS = """\
class Card:
    def render(self) -> str:
        return ""


def load(path):
    return Card()
"""
_VIEWS = """\
from models import Card, load


def show(path):
    return load(path).render()
"""
_DOCS = "# Cards\n\n## Rendering\n\nText.\n"


def _index() -> SymbolIndex:
    return SymbolIndex(
        [build_card("models.py", _MODELS), build_card("views.py", _VIEWS), build_card("docs/cards.md", _DOCS)]
    )


def test_a_name_is_found_bare_qualified_or_by_a_qualified_tail() -> None:
    index = _index()
    expected = [SymbolHit("models.py", "Card.render", "render", "method", 2, 3, "def render(self) -> str")]
    assert index.lookup("render") == expected
    assert index.lookup("Card.render") == expected
    assert index.lookup("models.Card.render") == []  # a module prefix is not part of the qualified name
    assert [(h.path, h.start, h.end) for h in index.lookup("load")] == [("models.py", 6, 7)]


def test_an_exact_match_wins_and_a_different_case_is_the_fallback() -> None:
    index = _index()
    index.add(build_card("other.py", "def card():\n    pass\n"))
    assert [h.qualified for h in index.lookup("Card")] == ["Card"]
    assert [h.path for h in index.lookup("CARD")] == ["models.py", "other.py"]


def test_headings_are_found_by_title_or_by_their_path_of_titles() -> None:
    index = _index()
    assert [(h.path, h.kind, h.start, h.end) for h in index.lookup("Rendering")] == [("docs/cards.md", "heading", 3, 5)]
    assert index.lookup("Cards > Rendering") == index.lookup("Rendering")


def test_a_name_no_code_defines_finds_the_sections_whose_heading_has_it_as_a_word() -> None:
    index = _index()
    index.add(build_card("docs/setup.md", "# Setup\n\n## Rendering options\n\nFlags.\n\n## Other\n"))
    found = [(h.path, h.qualified, h.start, h.end) for h in index.lookup("options")]
    assert found == [("docs/setup.md", "Setup > Rendering options", 3, 5)]  # the section, to the next heading
    assert [h.path for h in index.lookup("rendering")] == ["docs/cards.md"]  # a title's own match comes first
    assert [h.kind for h in index.lookup("Card")] == ["class"]  # code that defines the name wins over prose
    assert index.lookup("set") == []  # a short word names nothing
    index.remove("docs/setup.md")
    assert index.lookup("options") == []


def test_uses_lists_the_files_referencing_a_name_but_not_a_file_that_only_defines_it() -> None:
    index = _index()
    assert index.uses("load") == ["views.py"]
    assert index.uses("Card") == ["models.py", "views.py"]  # models.py builds one in load()
    assert index.uses("Card.render") == ["views.py"]  # by the name's last part
    assert index.uses("show") == []
    assert index.uses("missing") == [] and index.lookup("missing") == []


def test_adding_a_card_for_a_known_path_replaces_the_old_one() -> None:
    index = _index()
    index.add(build_card("views.py", "def present():\n    return 1\n"))
    assert len(index) == 3
    assert index.lookup("show") == [] and index.uses("load") == []
    assert [h.path for h in index.lookup("present")] == ["views.py"]


def test_removing_a_path_forgets_its_definitions_and_uses() -> None:
    index = _index()
    index.remove("models.py")
    index.remove("never-added.py")
    assert "models.py" not in index and index.card("models.py") is None
    assert index.lookup("Card") == [] and index.lookup("card") == []
    assert index.uses("Card") == ["views.py"]
    assert index.lookup("render") == [] and index.uses("render") == ["views.py"]


def test_records_are_plain_json_and_rebuild_an_equal_index() -> None:
    index = _index()
    records = json.loads(json.dumps(index.to_records()))
    assert [r["path"] for r in records] == ["docs/cards.md", "models.py", "views.py"]
    again = SymbolIndex.from_records(records)
    assert again.to_records() == index.to_records()
    assert again.lookup("Card.render") == index.lookup("Card.render")
    assert again.uses("load") == index.uses("load")
    assert [card.path for card in again] == ["docs/cards.md", "models.py", "views.py"]


def test_a_malformed_record_is_refused() -> None:
    with pytest.raises(ValueError):
        SymbolIndex.from_records([{"path": "a.py"}])


def test_knows_says_whether_the_index_can_answer_for_a_name() -> None:
    index = _index()
    assert index.knows("Card") and index.knows("render") and not index.knows("nowhere")
