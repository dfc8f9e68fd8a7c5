"""`live-memory team-setup`: the administrator sets a team store up (team_admin.py; docs/team-store.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from live_memory.core.errors import TeamStoreError


def add_team_setup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default="",
        help="an administrator's postgresql:// URL to the team's database (default: LIVE_MEMORY_TEAM_STORE, else "
        "libpq's PG* variables)",
    )
    parser.add_argument(
        "--member", action="append", default=[], metavar="ROLE", help="a teammate's role to create or add (repeat)"
    )


def cmd_team_setup(args: argparse.Namespace) -> int:
    from live_memory.team.admin import set_up  # the store's driver loads only when it is used

    try:
        done = asyncio.run(set_up(args.url or os.environ.get("LIVE_MEMORY_TEAM_STORE", ""), args.member))
    except (TeamStoreError, ValueError) as exc:
        print(f"live-memory: {exc}", file=sys.stderr)
        return 1
    for line in done:
        print(line)
    return 0
