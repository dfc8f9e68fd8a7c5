"""The snapshot schema: what reaches the disk, what comes back, and what is refused."""

from __future__ import annotations

import hashlib
import json

import pytest

from live_memory.core.messages import Message, TextPart
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.hot_set import FileUse
from live_memory.memory.ledger import LedgerFact
from live_memory.workspaces.snapshot import (
    SCHEMA_VERSION,
    HistoryEncoder,
    encode_document,
    parse_snapshot,
    restore_stats,
    restore_window,
    snapshot_payload,
    window_json,
)
from live_memory.workspaces.workspace import WorkspaceStats


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stored(window: ContextWindow, stats: WorkspaceStats | None = None) -> dict[str, object]:
    return {"schema": SCHEMA_VERSION, "saved_at": 1.0, **snapshot_payload("/repo", window, stats or WorkspaceStats())}


def answered(window: ContextWindow, question: str, answer: str, cites: tuple[str, ...] = ()) -> None:
    window.sync_deltas()
    window.add_exchange(Message("user", (TextPart(f"## Question\n{question}"),)), question, answer, cites)


def test_a_snapshot_never_holds_file_bytes_or_deltas() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.observe("secret_plan.md", "TOP-SECRET-CONTENT", sha("s"))
    answered(window, "q", "a", cites=("secret_plan.md",))
    data = stored(window)
    assert "TOP-SECRET-CONTENT" not in str(data)
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(data).window)
    assert [t.message for t in restored.history] == [
        t.message for t in window.history if t.kind in ("question", "answer")
    ]
    assert restored.files["secret_plan.md"].content is None
    assert restored.history[-1].cites == ("secret_plan.md",)


def test_ledger_facts_keep_their_sources_and_staleness() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.ledger.facts = [LedgerFact("a.py defines A", {"a.py": sha("a")}, stale=True)]
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(stored(window)).window)
    assert restored.ledger.facts == [LedgerFact("a.py defines A", {"a.py": sha("a")}, stale=True)]


def test_a_legacy_string_ledger_still_renders() -> None:
    data = stored(ContextWindow(budget_tokens=10_000))
    data["window"] = {**data["window"], "ledger": "Auth lives in src/auth."}  # type: ignore[dict-item]
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(data).window)
    assert "Auth lives in src/auth." in restored.ledger.render()


def test_counters_survive_the_round_trip() -> None:
    stats = WorkspaceStats(questions=3, cost_usd=0.25, compactions=1)
    again = restore_stats(parse_snapshot(stored(ContextWindow(budget_tokens=1000), stats)).stats)
    assert (again.questions, again.cost_usd, again.compactions) == (3, 0.25, 1)


@pytest.mark.parametrize(
    "breakage",
    [
        {"window": {"history": [{"kind": "question", "message": {"role": "robot", "parts": []}}]}},
        {"window": {"files": [{"path": "a.py"}]}},  # no hash
        {"window": "not a window"},
    ],
)
def test_a_payload_that_does_not_fit_the_schema_is_refused(breakage: dict[str, object]) -> None:
    data = {**stored(ContextWindow(budget_tokens=1000)), **breakage}
    with pytest.raises(ValueError):
        parse_snapshot(data)


def test_a_snapshot_encoded_incrementally_is_byte_identical_to_a_fresh_encoding() -> None:
    """Turns encoded once and joined give the very bytes of encoding the whole document afresh: while
    the history grows, after a compaction rewrites it, and for text that looks like the splice marker."""
    window = ContextWindow(budget_tokens=10_000)
    encoder = HistoryEncoder()

    def same_bytes() -> str:
        spliced = encode_document(
            {"schema": SCHEMA_VERSION, **snapshot_payload("/repo", window, WorkspaceStats(), encoder)}
        )
        fresh = json.dumps(
            {"schema": SCHEMA_VERSION, **snapshot_payload("/repo", window, WorkspaceStats())}, separators=(",", ":")
        )
        assert spliced == fresh
        return spliced

    assert json.loads(same_bytes())["window"]["history"] == []
    for index, question in enumerate(['"quoted" \\ é', "\x00history-0\x00", "\u2028 ✓", "plain"]):
        answered(window, question, f"answer {index}", cites=("a.py",))
        same_bytes()
    window.history = window.history[2:]  # a compaction folded the oldest exchange away
    answered(window, "after the compaction", "ok")
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(json.loads(same_bytes())).window)
    assert [t.question for t in restored.history if t.kind == "question"] == [
        "\x00history-0\x00",
        "\u2028 ✓",
        "plain",
        "after the compaction",
    ]


def test_the_hot_sets_counts_of_use_survive_the_round_trip() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("src/app.py", sha("app"), 40)  # used in the first question
    window.observe("src/quiet.py", "QUIET = 1\n", sha("quiet"))  # preloaded, say: known, never used
    answered(window, "q1", "a1")
    answered(window, "q2", "a2")
    window.note_use("src/app.py")  # used again after two questions
    data = stored(window)
    files = {f["path"]: f for f in window_json(window)["files"]}
    app = files["src/app.py"]
    assert (app["uses"], app["first_use"], app["last_use"]) == (2, 0, 2)
    assert "uses" not in files["src/quiet.py"]
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(json.loads(json.dumps(data))).window)
    assert restored.file_uses == {"src/app.py": FileUse(2, 0, 2)}


def test_a_snapshot_written_before_counts_of_use_still_loads() -> None:
    data = {
        "schema": SCHEMA_VERSION,
        "saved_at": 1.0,
        "workspace": "/repo",
        "window": {"files": [{"path": "src/app.py", "sha256": sha("app"), "size": 40, "last_used": 3}]},
    }
    restored = ContextWindow(budget_tokens=10_000)
    restore_window(restored, parse_snapshot(data).window)
    assert restored.files["src/app.py"].last_used == 3
    assert restored.file_uses == {}
