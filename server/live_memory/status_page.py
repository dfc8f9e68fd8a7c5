"""GET /: a small, self-contained HTML status page of every workspace, loaded or on disk (no scripts,
no assets)."""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from typing import Any

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Live Memory</title>
<meta http-equiv="refresh" content="30">
<style>
body{{font:14px system-ui,sans-serif;margin:2rem;color:#222}} h1{{font-size:1.3rem}}
table{{border-collapse:collapse;width:100%}} th,td{{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #ddd}}
.bar{{background:#eee;width:8rem;height:.7rem;display:inline-block;vertical-align:middle}}
.bar span{{display:block;height:100%;background:#3a7}} .warn span{{background:#d83}} .muted{{color:#777}}
</style></head><body>
<h1>Live Memory <span class="muted">{version} · {model} · up {uptime}</span></h1>
<p>{questions} answered · spend today ${spend_today:.4f}{budget} · cache-read share {cache_share:.0%}
· ~{saved:,} tokens saved for the agents</p>
<table><thead><tr><th>Workspace</th><th>Context fill</th><th>Questions</th><th>Files</th><th>Ledger</th>
<th>Cost</th><th>Last compaction</th></tr></thead><tbody>
{rows}
</tbody></table></body></html>
"""

ROW = (
    '<tr><td>{workspace}</td><td><span class="bar{warn}"><span style="width:{pct:.0f}%"></span></span> '
    "{pct:.0f}% <span class=muted>({used:,}/{total:,})</span></td><td>{questions}</td><td>{files}{stale}</td>"
    "<td>{facts}</td><td>${cost:.4f}</td><td>{compaction}</td></tr>"
)


def _when(stamp: float | None) -> str:
    if not stamp:
        return "never"
    return datetime.datetime.fromtimestamp(stamp, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


ON_DISK_ROW = (
    '<tr class="muted"><td>{workspace}</td><td>on disk, not loaded yet</td><td>{questions}</td><td></td>'
    "<td>{facts}</td><td>${cost:.4f}</td><td>saved {saved}</td></tr>"
)


def render_status_page(
    server: dict[str, Any], workspaces: list[dict[str, Any]], on_disk: Sequence[dict[str, Any]] = ()
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
                facts=meta["ledger_facts"],
                cost=meta["cost_usd"],
                saved=html.escape(_when(meta["saved_at"])),
            )
        )
    today = server["today"]
    budget = f" of ${today['daily_budget_usd']:.2f}" if today["daily_budget_usd"] else ""
    empty = '<tr><td colspan="7" class="muted">No workspace loaded yet: ask a question first.</td></tr>'
    return PAGE.format(
        version=html.escape(server["version"]),
        model=html.escape(server["model"]),
        uptime=f"{server['uptime_s'] / 3600:.1f} h",
        questions=f"{server['questions_answered']} question" + ("" if server["questions_answered"] == 1 else "s"),
        spend_today=today["foreground_usd"] + today["background_usd"],
        budget=html.escape(budget),
        cache_share=server["cache_read_share"],
        saved=server["estimated_tokens_saved"],
        rows="\n".join(rows) or empty,
    )
