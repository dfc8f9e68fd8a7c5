"""What model calls cost: `charge()` prices one call's usage, adds it to the workspace's counters and to
today's tally, and saves the tally. Every model call (questions, compaction summaries, keep-warm pings)
is charged through it.

Daily spend: what questions (foreground) and summaries/keep-warm (background) cost today, server-wide
and per workspace, against the configured caps.

Background work stops first: once a cap is nearly spent (`BACKGROUND_STOP_SHARE`), distillation
sheds instead of summarizing and keep-warm pauses; once it is spent, questions get a clear answer
saying so. Days are UTC. The tally survives restarts (`spend.json` in the data dir, written off the
event loop; a question's charge is written behind with its snapshot, so a kill within
SNAPSHOT_WRITE_BEHIND_S of a charge loses it from the tally, as a power cut may: it is advisory).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from live_memory.constants import BACKGROUND_STOP_SHARE
from live_memory.core.errors import BudgetExceededError
from live_memory.core.records import Usage
from live_memory.fs.dir_sync import DirectorySyncer
from live_memory.fs.safe_files import atomic_write, ensure_private_dir
from live_memory.providers.pricing import cost_usd
from live_memory.settings.prices import price_overrides
from live_memory.settings.runtime import Runtime
from live_memory.workspaces.workspace import WorkspaceState

if TYPE_CHECKING:  # the compactor prices its calls through here: no import cycle
    from live_memory.engine.compaction import CompactionReport

logger = logging.getLogger(__name__)

SPEND_FILE = "spend.json"


@dataclass(frozen=True)
class Caps:
    daily_usd: float = 0.0  # 0: no cap
    workspace_daily_usd: float = 0.0


@dataclass
class DaySpend:
    day: str
    foreground_usd: float = 0.0
    background_usd: float = 0.0
    by_workspace: dict[str, float] = field(default_factory=dict)

    @property
    def total_usd(self) -> float:
        return self.foreground_usd + self.background_usd


def dollars(amount: float) -> str:
    """$2.50, and small amounts to their first digits ($0.000031), never a cap of a tenth of a cent as $0.00."""
    if amount == 0 or round(amount, 2) == amount or amount >= 10:
        return f"${amount:,.2f}"
    return "$" + f"{amount:.6f}".rstrip("0")


def raise_cap(key: str) -> str:
    """How to raise a spend cap: the command (it applies at once), and the variable that overrides it."""
    return (
        f"raise it: `live-memory config set {key}=N` (applies at once), or LIVE_MEMORY_{key.upper()} in the "
        "server's environment when that is where it is set"
    )


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


def caps_of(runtime: Runtime) -> Caps:
    s = runtime.settings
    return Caps(daily_usd=s.daily_budget_usd, workspace_daily_usd=s.workspace_daily_budget_usd)


def call_cost(runtime: Runtime, model: str, usage: Usage) -> float | None:
    """USD for one call's `usage`; None on a subscription credential (not metered)."""
    if runtime.provider is None or runtime.provider.info.subscription:
        return None
    return cost_usd(model, usage, price_overrides(runtime.settings))


class SpendTracker:
    def __init__(
        self, data_dir: Path, clock: Callable[[], float] = time.time, syncer: DirectorySyncer | None = None
    ) -> None:
        self.path = data_dir / SPEND_FILE
        self.clock = clock
        self.syncer = syncer or DirectorySyncer()
        self._today = self._read()
        self._version = 0  # tallies handed out for writing
        self._written = 0  # the newest of them on disk
        self._write_lock = threading.Lock()

    async def charge(
        self, state: WorkspaceState, runtime: Runtime, model: str, usage: Usage, *, background: bool
    ) -> float | None:
        """Price one model call, count it on the workspace and today's tally, and save the tally."""
        cost = self.count(state, runtime, model, usage, background=background)
        await self.save_after(cost)
        return cost

    def count(
        self, state: WorkspaceState, runtime: Runtime, model: str, usage: Usage, *, background: bool
    ) -> float | None:
        """Price one model call and count it on the workspace and today's tally (no I/O)."""
        cost = call_cost(runtime, model, usage)
        stats = state.stats
        if background:
            stats.background_usage = stats.background_usage + usage
            stats.background_cost_usd += cost or 0.0
        else:
            stats.usage = stats.usage + usage
            stats.cost_usd += cost or 0.0
        self.record(state.id, cost or 0.0, background=background)
        return cost

    def count_compactions(
        self, state: WorkspaceState, runtime: Runtime, reports: Sequence[CompactionReport], now: float
    ) -> float:
        """Count an answer's compactions on the workspace's stats and price their summaries (background calls, on
        the summary model); returns what they cost (no I/O)."""
        settings = runtime.settings
        summary_model = settings.summary_model or settings.model
        spent = 0.0
        for report in reports:
            stats = state.stats
            stats.compactions += 1
            stats.summaries_written += report.summaries
            stats.last_compaction_at = now
            spent += self.count(state, runtime, summary_model, report.usage, background=True) or 0.0
        return spent

    async def save_after(self, cost: float | None) -> None:
        """Save the tally after a charge that cost something (the tally is advisory: errors are logged)."""
        write = self.pending_save(cost)
        if write is not None:
            await asyncio.to_thread(write)

    def pending_save(self, cost: float | None) -> Callable[[], None] | None:
        """After a charge that cost something: a blocking write of the tally as it is now, for a worker
        thread (a question's runs in the same hop as its snapshot); None when there is nothing to save.
        Writes may run in any order: an older tally never replaces a newer one. Errors are logged."""
        if not cost:
            return None
        self._version += 1
        version, text = self._version, json.dumps(self._payload())

        def write() -> None:
            with self._write_lock:
                if version <= self._written:
                    return
                try:
                    self._write(text)
                except OSError as exc:  # the answer must not fail for it
                    logger.warning("could not save today's spend to %s: %s", self.path, exc)
                    return
                self._written = version

        return write

    def _read(self) -> DaySpend:
        day = utc_day(self.clock())
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("day") == day:
                return DaySpend(
                    day,
                    float(raw.get("foreground_usd", 0.0)),
                    float(raw.get("background_usd", 0.0)),
                    {str(k): float(v) for k, v in dict(raw.get("by_workspace", {})).items()},
                )
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        return DaySpend(day)

    def today(self) -> DaySpend:
        day = utc_day(self.clock())
        if self._today.day != day:
            self._today = DaySpend(day)
        return self._today

    def record(self, workspace_id: str, usd: float, *, background: bool) -> None:
        if usd <= 0:
            return
        spend = self.today()
        if background:
            spend.background_usd += usd
        else:
            spend.foreground_usd += usd
        spend.by_workspace[workspace_id] = spend.by_workspace.get(workspace_id, 0.0) + usd

    def check_question(self, workspace_id: str, caps: Caps) -> None:
        spent = self.spent(workspace_id, caps)
        if spent is not None:
            raise BudgetExceededError(spent)

    def spent(self, workspace_id: str | None, caps: Caps) -> str | None:
        """Why questions are refused today (the server's cap, else `workspace_id`'s), with when they resume and
        how to raise the cap; None while neither is spent."""
        spend = self.today()
        if caps.daily_usd and spend.total_usd >= caps.daily_usd:
            return (
                f"Live Memory's daily budget of {dollars(caps.daily_usd)} is spent ({dollars(spend.total_usd)} today);"
                f" questions resume at 00:00 UTC, or {raise_cap('daily_budget_usd')}"
            )
        used = spend.by_workspace.get(workspace_id, 0.0) if workspace_id is not None else 0.0
        if caps.workspace_daily_usd and used >= caps.workspace_daily_usd:
            return (
                f"this workspace's daily budget of {dollars(caps.workspace_daily_usd)} is spent ({dollars(used)} "
                f"today); questions resume at 00:00 UTC, or {raise_cap('workspace_daily_budget_usd')}"
            )
        return None

    def background_allowed(self, workspace_id: str, caps: Caps) -> bool:
        spend = self.today()
        if caps.daily_usd and spend.total_usd >= BACKGROUND_STOP_SHARE * caps.daily_usd:
            return False
        used = spend.by_workspace.get(workspace_id, 0.0)
        return not (caps.workspace_daily_usd and used >= BACKGROUND_STOP_SHARE * caps.workspace_daily_usd)

    def report(self, caps: Caps) -> dict[str, Any]:
        spend = self.today()
        remaining = max(caps.daily_usd - spend.total_usd, 0.0) if caps.daily_usd else None
        return {
            "day": spend.day,
            "foreground_usd": round(spend.foreground_usd, 6),
            "background_usd": round(spend.background_usd, 6),
            "daily_budget_usd": caps.daily_usd or None,
            "remaining_usd": None if remaining is None else round(remaining, 6),
            "workspace_daily_budget_usd": caps.workspace_daily_usd or None,
            "spent": self.spent(None, caps),  # why questions are refused today, or None
        }

    def _payload(self) -> dict[str, Any]:
        spend = self.today()
        return {
            "day": spend.day,
            "foreground_usd": spend.foreground_usd,
            "background_usd": spend.background_usd,
            "by_workspace": dict(spend.by_workspace),
        }

    def _write(self, text: str) -> None:
        # Atomic (a kill leaves the old tally or the new one) but fsync-ed later, off the answer path:
        # a power cut within DIR_FSYNC_DELAY_S of a charge may lose today's tally (it is advisory).
        ensure_private_dir(self.path.parent)
        atomic_write(self.path, text.encode("utf-8"), mode=0o600, sync_file=False, sync_dir=False)
        self.syncer.request(self.path.parent, self.path)
