"""`live-memory install|uninstall AGENT`: connect another coding agent to this server, or take it back out.

After an install, what the agent would meet from this shell is checked (`agent_checks.py`) and said as a
warning: an agent that cannot reach the server shows no error of its own. When the server wants a bearer token
and none was named, install names LIVE_MEMORY_AUTH_TOKEN itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from live_memory.cli.agent_checks import access, check_agent
from live_memory.cli.agents import AGENTS
from live_memory.cli.client import server_url
from live_memory.settings.config import Settings

TOKEN_VARIABLE = "LIVE_MEMORY_AUTH_TOKEN"


def add_agent_arguments(parser: argparse.ArgumentParser, *, install: bool) -> None:
    parser.add_argument("agent", choices=sorted(AGENTS), help="the coding agent")
    what = "also add the note on when to ask to" if install else "also take this agent out of the note in"
    parser.add_argument(
        "--instructions",
        nargs="?",
        const=os.getcwd(),
        default="",
        metavar="REPO",
        help=f"{what} REPO's AGENTS.md or GEMINI.md (default REPO: the current directory)",
    )
    if install:
        parser.add_argument("--url", default="", help="the server's URL (default: the one URL precedence)")
        parser.add_argument(
            "--token-env",
            default="",
            help=f"the variable holding the token (default: none, or {TOKEN_VARIABLE} when the server requires one)",
        )


def cmd_install_agent(settings: Settings, args: argparse.Namespace) -> int:
    """`install`/`uninstall` AGENT: edit that agent's configuration; prints what changed, then any warning."""
    setup = AGENTS[args.agent]
    home = setup.home(settings.env)
    instructions = Path(args.instructions).resolve() if args.instructions else None
    if args.command != "install":
        for line in setup.uninstall(home, instructions):
            print(line)
        return 0
    base = server_url(settings, args.url)
    wants_token = settings.auth_token or access(base, None) == "required"
    token_env = args.token_env or (TOKEN_VARIABLE if wants_token else None)
    for line in setup.install(home, base, token_env, instructions):
        print(line)
    found = check_agent(args.agent, settings.env)
    if found is not None and not found.ok:
        print(f"live-memory: warning: {found.detail}; fix: {found.fix}", file=sys.stderr)
    return 0
