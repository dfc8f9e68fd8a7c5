"""What /stats, /metrics and the status page show of the team store: one mutable record the sync keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from live_memory.team.url import mask_url

# "failing": the store answers, but a pull failed for another reason (its error is in last_error).
StoreState = Literal["off", "connecting", "up", "down", "failing"]


@dataclass
class TeamFigures:
    """What /stats, /metrics and the status page show of the team store."""

    state: StoreState = "off"
    latency_s: float | None = None
    schema_version: int | None = None
    pushed: int = 0
    last_error: str = ""
    queue_dropped: int = 0
    answers_pushed: int = 0
    answers_reused: int = 0  # questions answered from a teammate's answer, without a model call
    rows_rejected: int = 0  # rows of the store refused at the edge (each counted once)
    pull_errors: int = 0  # pulls that failed
    withheld: int = 0  # queued items a re-check kept from the store when they were pushed
    author: str = ""  # the role this server writes as, as the store's database knows it
    above_row_security: bool | None = None  # that role escapes the policies that prove authors
    listening: bool = False  # the store's announcements arrive (else only the periodic pull brings news)

    def to_json(
        self, queued: int, pulled: int, url: str, answers: int = 0, trusted: Sequence[str] = ()
    ) -> dict[str, Any]:
        """`pulled`: team facts the ledgers took; `answers`: teammates' answers the workspaces hold."""
        security = None if self.above_row_security is None else "bypassed" if self.above_row_security else "enforced"
        return {
            "state": self.state,
            "store": mask_url(url),
            "latency_ms": None if self.latency_s is None else round(self.latency_s * 1000, 2),
            "schema_version": self.schema_version,
            "author": self.author,
            "row_security": security,
            "trusted_authors": list(trusted) or "all",
            "listening": self.listening,
            "facts_pulled": pulled,  # facts of the team the ledgers took
            "facts_pushed": self.pushed,
            "facts_queued": queued,
            "facts_dropped_from_queue": self.queue_dropped,
            "answers_pulled": answers,
            "answers_pushed": self.answers_pushed,
            "answers_reused": self.answers_reused,
            "rows_rejected": self.rows_rejected,
            "withheld": self.withheld,
            "pull_errors": self.pull_errors,
            "last_error": self.last_error,
        }
