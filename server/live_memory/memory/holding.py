"""The hot set's choices on a window (hot_set.py decides; the window holds): the prices it decides with, the
lines an answer cited taken in, and what stays held at a compaction."""

from __future__ import annotations

from live_memory.memory.cited_lines import CitedLines
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.file_context import file_block
from live_memory.memory.hot_set import FileUse, HoldCosts, HotSetPolicy, returns


def hold_costs(window: ContextWindow, read_share: float, write_share: float) -> HoldCosts:
    """What holding and re-reading cost in `window` now (an extra round reads its whole prompt), with the requests
    a question sends as measured there and how soon its files came back once used."""
    came_back = returns(window.file_uses, window.questions_asked())
    return HoldCosts(read_share, write_share, window.prompt_tokens(), window.requests_per_question, came_back)


def admit_cited(window: ContextWindow, lines: CitedLines, policy: HotSetPolicy, costs: HoldCosts) -> bool:
    """Hold these cited lines if the rule takes them (they fit its budget and are worth more than their one cache
    write); True when they were taken in."""
    if lines.key in window.cited:
        return False
    use = window.file_uses.get(lines.path, FileUse())
    tokens = window.tokens(lines.block())
    if not policy.admits(tokens, use, window.questions_asked(), costs, window.held_tokens()):
        return False
    return window.hold_cited(lines)


def rechoose_hot_set(window: ContextWindow, policy: HotSetPolicy, costs: HoldCosts) -> list[str]:
    """At a compaction: keep the held files and cited lines the rule still picks (preloads stay), shed the
    others; returns what was shed (a path, or `path:first-last`)."""
    files = {p: (p, window.tokens(file_block(f))) for p, f in window.files.items() if f.content and not f.preloaded}
    lines = {f"{k[0]}:{k[1]}-{k[2]}": (k[0], window.tokens(v.block())) for k, v in window.cited.items()}
    kept = set(policy.choose({**files, **lines}, window.file_uses, window.questions_asked(), costs))
    for path in (k for k in files if k not in kept):
        window.shed_content(path)
    for key in [k for k in window.cited if f"{k[0]}:{k[1]}-{k[2]}" not in kept]:
        del window.cited[key]
    return sorted(k for k in (*files, *lines) if k not in kept)
