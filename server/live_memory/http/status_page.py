"""GET /: a small, self-contained HTML status page (no scripts, no assets): the provider, model, endpoint and
credential state, spend today against the cap (questions vs background work; an alert once it is spent),
answer latency, every workspace loaded or on disk with the agents that asked it, and each loaded workspace's
last few questions (their text only when the status_show_questions option is on)."""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from typing import Any

from live_memory.workspaces.spend import dollars

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Live Memory</title>
<meta http-equiv="refresh" content="30">
<style>
body{{font:14px system-ui,sans-serif;margin:2rem;color:#222}} h1{{font-size:1.3rem}} h2{{font-size:1.05rem}}
table{{border-collapse:collapse;width:100%}} th,td{{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #ddd}}
.bar{{background:#eee;width:8rem;height:.7rem;display:inline-block;vertical-align:middle}}
.bar span{{display:block;height:100%;background:#3a7}} .warn span{{background:#d83}} .muted{{color:#777}}
.alert{{background:#fde8e0;border:1px solid #d83;padding:.5rem .8rem}}
</style></head><body>
<h1>Live Memory <span class="muted">{version} · up {uptime}</span></h1>
{alert}<p>{provider} · {model} · {endpoint} · credential: {credential}</p>
{team}<p>{questions} answered · answer latency {latency} · cache-read share {cache_share:.0%}
· {saved}</p>
<p>Spend today: ${spend_today:.4f}{budget} (questions ${today_questions:.4f}, background ${today_background:.4f})
· since start: questions ${cost_questions:.4f}, background ${cost_background:.4f}</p>
<table><thead><tr><th>Workspace</th><th>Context fill</th><th>Questions</th><th>Asked by</th><th>Files</th>
<th>Ledger</th><th>Cost</th><th>Last compaction</th></tr></thead><tbody>
{rows}
</tbody></table>
{recent}
</body></html>
"""

ROW = (
    '<tr><td>{workspace}</td><td><span class="bar{warn}"><span style="width:{pct:.0f}%"></span></span> '
    "{pct:.0f}% <span class=muted>({used:,}/{total:,})</span></td><td>{questions}</td><td>{agents}</td>"
    "<td>{files}{stale}</td>"
    "<td>{facts}</td><td>${cost:.4f}</td><td>{compaction}</td></tr>"
)

ON_DISK_ROW = (
    '<tr class="muted"><td>{workspace}</td><td>on disk, not loaded yet</td><td>{questions}</td><td>{agents}</td>'
    "<td></td><td>{facts}</td><td>${cost:.4f}</td><td>saved {saved}</td></tr>"
)

RECENT = (
    "<h2>Recent questions · {workspace}</h2>\n<table><thead><tr><th>Time</th><th>Agent</th><th>Latency</th>"
    "<th>Tool calls</th><th>Cost</th><th>Outcome</th>{question_head}</tr></thead><tbody>\n{rows}\n</tbody></table>"
)
RECENT_ROW = (
    "<tr><td>{at}</td><td>{agent}</td><td>{latency:.1f} s</td><td>{tools}</td><td>{cost}</td><td>{outcome}</td>"
    "{question}</tr>"
)


def _when(stamp: float | None) -> str:
    if not stamp:
        return "never"
    return datetime.datetime.fromtimestamp(stamp, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _clock(stamp: float) -> str:
    return datetime.datetime.fromtimestamp(stamp, datetime.UTC).strftime("%H:%M:%S UTC")


def uptime(seconds: float) -> str:
    """Minutes under an hour, hours under two days, then days."""
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _latency(latency: dict[str, Any]) -> str:
    if not latency.get("samples"):
        return "p50/p95 n/a (no answers yet)"
    return f"p50 {latency['p50_s']:.1f} s / p95 {latency['p95_s']:.1f} s"


def _money(value: float | None) -> str:
    return "not metered" if value is None else f"${value:.4f}"


def _agents(counts: dict[str, int] | None) -> str:
    """Who asked a workspace: "codex 3 · opencode 1", most questions first."""
    ordered = sorted((counts or {}).items(), key=lambda item: (-item[1], item[0]))
    return " · ".join(f"{html.escape(name)} {count}" for name, count in ordered) or "—"


def _saved(net: int) -> str:
    """The tokens-saved estimate in words: a net loss is said as one, not as a negative saving."""
    if net >= 0:
        return f"~{net:,} tokens saved for the agents (estimate, net of this server's own spend)"
    return (
        f"no tokens saved yet: this server's own spend exceeds what its tools read for the agents by ~{-net:,} "
        "tokens (estimate; a memory pays off over later questions)"
    )


def _recent_section(workspace: dict[str, Any], show_questions: bool) -> str:
    entries = workspace.get("recent_questions") or []
    if not entries:
        return ""
    rows = [
        RECENT_ROW.format(
            at=_clock(q["at"]),
            agent=html.escape(q.get("agent") or "unknown"),
            latency=q["latency_s"],
            tools=q["tool_calls"],
            cost=_money(q["cost_usd"]),
            outcome=html.escape(q["outcome"]),
            question=f"<td>{html.escape(q.get('question', ''))}</td>" if show_questions else "",
        )
        for q in entries
    ]
    return RECENT.format(
        workspace=html.escape(workspace["workspace"]),
        question_head="<th>Question</th>" if show_questions else "",
        rows="\n".join(rows),
    )


def _team_line(team: dict[str, Any]) -> str:
    """The team store's state and what went through it; nothing when it is off."""
    if team["state"] == "off":
        return ""
    latency = f" · {team['latency_ms']:.0f} ms" if team["latency_ms"] is not None else ""
    error = f' · <span class="muted">{html.escape(team["last_error"])}</span>' if team["last_error"] else ""
    error = (f" · {team['rows_rejected']} rows refused" if team["rows_rejected"] else "") + error
    shared = (team["answers_pulled"], team["answers_pushed"], team["answers_reused"])
    answers = " · answers pulled {}, pushed {}, reused {}".format(*shared) if any(shared) else ""
    return (
        f"<p>Team store {html.escape(team['store'])}: {html.escape(team['state'])}{latency} · facts pulled "
        f"{team['facts_pulled']}, pushed {team['facts_pushed']}, queued {team['facts_queued']}{answers}{error}</p>\n"
    )


def render_status_page(
    server: dict[str, Any],
    workspaces: list[dict[str, Any]],
    on_disk: Sequence[dict[str, Any]] = (),
    *,
    show_questions: bool = False,
) -> str:
    rows = []
    for w in workspaces:
        pct = 100 * w["fill"]["ratio"]
        rows.append(
            ROW.format(
                workspace=html.escape(w["workspace"]),
                warn=" warn" if pct >= 85 else "",
                pct=pct,
                used=w["fill"]["used_tokens"],
                total=w["fill"]["total_tokens"],
                questions=w["questions_answered"],
                agents=_agents(w.get("agents")),
                files=w["file_contexts"],
                stale=f" <span class=muted>({w['stale_files']} stale)</span>" if w["stale_files"] else "",
                facts=w["ledger_facts"],
                cost=w["cost_usd"],
                compaction=html.escape(_when(w["last_compaction_at"])),
            )
        )
    for meta in on_disk:
        rows.append(
            ON_DISK_ROW.format(
                workspace=html.escape(meta["workspace"]),
                questions=meta["questions_answered"],
                agents=_agents(meta.get("agents")),
                facts=meta["ledger_facts"],
                cost=meta["cost_usd"],
                saved=html.escape(_when(meta["saved_at"])),
            )
        )
    today = server["today"]
    cap = today["daily_budget_usd"]
    budget = f" of the {dollars(cap)} daily cap" if cap else " (no daily cap)"
    missing = server["credential"] == "missing"
    alerts = []
    if missing:
        alerts.append(
            "No model credential: questions fail until one is set. Set LIVE_MEMORY_API_KEY (or the provider's own "
            "key variable) in the server's environment, then restart or POST /reload."
        )
    if today.get("spent"):
        alerts.append(f"Questions are refused: {today['spent']}.")
    alert = "".join(f'<p class="alert">{html.escape(text)}</p>\n' for text in alerts)
    empty = '<tr><td colspan="8" class="muted">No workspace loaded yet: ask a question first.</td></tr>'
    return PAGE.format(
        version=html.escape(server["version"]),
        uptime=uptime(server["uptime_s"]),
        alert=alert,
        provider=html.escape(server["provider"]),
        model=html.escape(server["model"]),
        endpoint=html.escape(server["endpoint"]),
        credential="<strong>missing</strong>" if missing else html.escape(server["credential"]),
        questions=f"{server['questions_answered']} question" + ("" if server["questions_answered"] == 1 else "s"),
        latency=_latency(server["latency"]),
        spend_today=today["foreground_usd"] + today["background_usd"],
        budget=html.escape(budget),
        today_questions=today["foreground_usd"],
        today_background=today["background_usd"],
        cost_questions=server["cost_usd"]["foreground"],
        cost_background=server["cost_usd"]["background"],
        cache_share=server["cache_read_share"],
        saved=html.escape(_saved(server["estimated_tokens_saved"])),
        team=_team_line(server["team"]),
        rows="\n".join(rows) or empty,
        recent="\n".join(filter(None, (_recent_section(w, show_questions) for w in workspaces))),
    )
