"""What may leave this machine for the team store, and whose rows this server takes back.

Only from an allowed repository (`team_repositories`); only a fact learned here, or an answer when answers are
shared (`team_share_answers`); only grounded on files, none of them secret (`secret_globs`), all of them inside
the checkout; naming no secret file; within the sizes a teammate's server accepts (team_rows.py); and with
no text that either credential net takes for a credential (credentials.py: detect-secrets and our own rules).
Whose facts and answers are taken back: every author's, or only those `team_trust` names.

The checks scan text for credentials: call `may_share` and `may_share_answer` off the event loop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from live_memory import constants as C
from live_memory.core.credentials import looks_like_credential
from live_memory.fs.jail import secret_matcher
from live_memory.memory.ledger import LedgerFact
from live_memory.team.rows import inside_checkout


@dataclass(frozen=True)
class TeamPolicy:
    """The team store's settings, fixed per settings snapshot."""

    url: str
    timeout_s: float
    pool_size: int
    repositories: tuple[str, ...]  # allowed repository identities; empty: every repository
    secret_globs: tuple[str, ...]
    user: str
    machine: str
    pull_limit: int = C.TEAM_STORE_PULL_LIMIT
    share_answers: bool = C.TEAM_SHARE_ANSWERS
    trusted: tuple[str, ...] = C.TEAM_TRUST  # the authors (database roles) whose rows are used; empty: all
    answer_max_chars: int = C.DEFAULT_MAX_ANSWER_TOKENS * C.TEAM_ANSWER_CHARS_PER_TOKEN

    def allows(self, repo: str | None) -> bool:
        return repo is not None and (not self.repositories or repo in self.repositories)

    def may_share(self, fact: LedgerFact) -> bool:
        """Only a fact learned here, one line within the fact cap, grounded on files, none of them secret,
        naming no secret and carrying nothing that looks like a credential."""
        if fact.team or fact.stale or len(fact.text) > C.TEAM_FACT_MAX_CHARS or not fact.text.isprintable():
            return False
        return self._plain(fact.sources, (fact.text,))

    def may_share_answer(self, question: str, answer: str, sources: Mapping[str, str]) -> bool:
        """Only with answers shared, within the answer cap, and by the facts' rule: grounded on files, nothing
        secret, no credential in the question or the answer."""
        if not self.share_answers or len(answer) > self.answer_max_chars or len(question) > C.MAX_QUESTION_CHARS:
            return False
        return self._plain(sources, (question, answer))

    def _plain(self, sources: Mapping[str, str], texts: Sequence[str]) -> bool:
        if not sources or len(sources) > C.TEAM_SOURCES_MAX_PATHS or not all(map(_inside, sources)):
            return False
        secrets = secret_matcher(self.secret_globs)
        if any(secrets.matches(path) for path in sources):
            return False
        for text in texts:
            # A word as written (".env"), without a sentence's full stop, or without a leading "./".
            words = {form for word in re.findall(r"[\w./-]+", text) for form in (word.rstrip("."), word.strip("./"))}
            if any(secrets.matches(word) for word in words if word) or looks_like_credential(text):
                return False
        return True


def _inside(path: str) -> bool:
    try:
        inside_checkout(path)
    except ValueError:
        return False
    return len(path) <= C.TEAM_PATH_MAX_CHARS
