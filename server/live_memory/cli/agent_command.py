"""`live-memory install|uninstall AGENT`: connect another coding agent to this server, or take it back out."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from live_memory.cli.agents import AGENTS
from live_memory.cli.client import server_url
from live_memory.config import Settings


def add_agent_arguments(parser: argparse.ArgumentParser, *, install: bool) -> None:
    parser.add_argument("agent", choices=sorted(AGENTS), help="the coding agent")
    parser.add_argument(
        "--instructions",
        nargs="?",
        const=os.getcwd(),
        default="",
        metavar="REPO",
        help="also add (remove) the note on when to ask in REPO's AGENTS.md or GEMINI.md (default REPO: cwd)",
    )
    if install:
        parser.add_argument("--url", default="", help="the server's URL (default: the one URL precedence)")
        parser.add_argument(
            "--token-env",
            default="",
            help="the variable holding the token (default: none, or LIVE_MEMORY_AUTH_TOKEN when the server has one)",
        )


def cmd_install_agent(settings: Settings, args: argparse.Namespace) -> int:
    """`install`/`uninstall` AGENT: edit that agent's configuration; prints what changed."""
    setup = AGENTS[args.agent]
    home = setup.home(settings.env)
    instructions = Path(args.instructions).resolve() if args.instructions else None
    if args.command == "install":
        token_env = args.token_env or ("LIVE_MEMORY_AUTH_TOKEN" if settings.auth_token else None)
        changes = setup.install(home, server_url(settings, args.url), token_env, instructions)
    else:
        changes = setup.uninstall(home, instructions)
    for line in changes:
        print(line)
    return 0
