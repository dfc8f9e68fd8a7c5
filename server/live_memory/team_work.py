"""A workspace's side of the team store, as the service runs it.

The service starts the pulls and the shares in the lifespan's task group, never on a question's path; none of
them may take the service down, so each logs its own failure. `teammates_answer` is the one call on a
question's path, and it reads only this checkout's disk. The store's driver is not imported here: `TeamSync`
is only a type to this module.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from live_memory.records import TeamAnswer, question_key
from live_memory.repo_identity import repository_identity
from live_memory.safe_files import disk_hashes
from live_memory.workspace import WorkspaceState

if TYPE_CHECKING:
    from live_memory.team_sync import TeamSync

logger = logging.getLogger(__name__)


async def _repo_of(state: WorkspaceState) -> str | None:
    if state.repo is None:
        state.repo = await repository_identity(state.tree_root)
    return state.repo


async def pull_into(team: TeamSync, max_file_bytes: int, state: WorkspaceState) -> None:
    """The team's facts for this checkout into the workspace's inbox (the ledger takes them at a freeze), and
    the teammates' answers by question, newest first."""
    try:
        repo = await _repo_of(state)
        pulled = await team.pull(repo, state.tree_root, max_file_bytes)
        known = {f.grounds for f in state.team_inbox}
        state.team_inbox += [f for f in pulled if f.grounds not in known]
        answers: dict[str, list[TeamAnswer]] = {}
        for answer in await team.pull_answers(repo):
            answers.setdefault(answer.key, []).append(answer)
        state.team_answers = answers
    except Exception:  # a background pull must never take the service down; answers go on without it
        logger.exception("pulling the team's facts for %s failed", state.root)
    finally:
        state.team_pulled.set()


async def share_facts(team: TeamSync, state: WorkspaceState) -> None:
    """Queue the facts learned here that the team store has not been given (durably, then pushed by the
    team's background task)."""
    try:
        facts = state.window.ledger.unshared()
        await team.share(await _repo_of(state), facts)
        state.apply(lambda window: window.ledger.mark_shared(facts))
    except Exception:
        logger.exception("queueing %s's facts for the team store failed", state.root)


async def share_answer(
    team: TeamSync, question: str, answer: str, sources: dict[str, str], state: WorkspaceState
) -> None:
    """Queue an answer with its question and grounds (when answers are shared and it may leave)."""
    try:
        await team.share_answer(await _repo_of(state), question, answer, sources)
    except Exception:
        logger.exception("queueing an answer about %s for the team store failed", state.root)


async def teammates_answer(team: TeamSync, state: WorkspaceState, question: str) -> TeamAnswer | None:
    """The newest teammate's answer to this very question (case and whitespace folded) whose every file has
    the same bytes here now, checked against the disk, off the event loop; None without one."""
    candidates = state.team_answers.get(question_key(question), []) if state.team_answers else []
    if not candidates:
        return None
    paths = {path for answer in candidates for path in answer.sources}
    current = await asyncio.to_thread(disk_hashes, state.tree_root, paths)
    for answer in candidates:
        if all(current.get(path) == digest for path, digest in answer.sources.items()):
            team.figures.answers_reused += 1
            return answer
    return None  # answers about other bytes: the model answers afresh
