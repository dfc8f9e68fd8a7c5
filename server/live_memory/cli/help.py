"""What `live-memory <command> --help` says: each command's one line, its description, and the
environment variables it reads. Text only; `cli.py` builds the parser from it."""

from __future__ import annotations

_CONNECT_ENV = (
    "LIVE_MEMORY_HOST, LIVE_MEMORY_PORT   where the server listens (default 127.0.0.1:7711)\n"
    "  LIVE_MEMORY_AUTH_TOKEN               the bearer token, if the server requires one\n"
    "  LIVE_MEMORY_DATA_DIR                 the data dir whose config.json is read too "
    "(default ~/.local/share/live-memory)"
)
_ALL_OPTIONS_ENV = (
    "every option as LIVE_MEMORY_<KEY> (docs/configuration.md; `live-memory config show` lists them with\n"
    "  their sources), LIVE_MEMORY_DATA_DIR (default ~/.local/share/live-memory, holds config.json), and the\n"
    "  provider's own variables (ANTHROPIC_API_KEY, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ...)"
)
HELP: dict[str, tuple[str, str, str]] = {
    # command: (one-line help, description, environment)
    "serve": (
        "run the server (exits 0 if one is already running)",
        "Run the Live Memory service in the foreground: MCP at /mcp, plus /health, /stats, /notify and the\n"
        "other routes. A second `serve` finds the running one and exits 0; a port held by another program\n"
        "exits 1. SIGTERM lets running questions answer, flushes the snapshots and exits 0.",
        _ALL_OPTIONS_ENV + "\n  (--host and --port override LIVE_MEMORY_HOST and LIVE_MEMORY_PORT)",
    ),
    "ask": (
        "ask a running server a question",
        "Ask the running server one question about a workspace and print the answer with its metadata\n"
        "trailer. Waits up to --wait seconds for a server that is still starting. `ask -` reads the\n"
        "question from standard input.",
        _CONNECT_ENV
        + "\n  LIVE_MEMORY_DEFAULT_TIMEOUT_S        the server's soft deadline; the client waits a minute longer",
    ),
    "stats": (
        "print /stats of a running server",
        "Print the running server's statistics as JSON: every loaded workspace, or one with --cwd.",
        _CONNECT_ENV,
    ),
    "ledger": (
        "show, export or edit what the memory believes",
        "Show the knowledge ledger of a workspace (`show`), export it as Markdown or JSON (`export`), or\n"
        'drop the facts containing a text (`forget "<text>"`).',
        _CONNECT_ENV,
    ),
    "doctor": (
        "check the setup and print fixes",
        "Check Python, the configuration, the data dir, the server, the credential, a 1-token round trip to\n"
        "the model and (with --plugin-dir) the plugin's URL; print a fix for each failure. Exits 1 if any fails.",
        _ALL_OPTIONS_ENV,
    ),
    "team-setup": (
        "set a team store up: a role per teammate, authors proven (docs/team-store.md)",
        "For the team store's administrator. Create the schema, the owner and team roles, the row-level\n"
        "security that proves who wrote each row, and a login role for each --member (or add an existing\n"
        "role to the team); take over a store made before by a shared role. Idempotent: run it again after\n"
        "each upgrade and to add teammates. Sets no password.",
        "LIVE_MEMORY_TEAM_STORE   the URL when --url is not given (it must log in as an administrator)\n"
        "  PGHOST, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE... (libpq's own, for what the URL leaves out)",
    ),
    "install-service": (
        "install the systemd unit and start it (docs/operations.md)",
        "Render the systemd unit for this installation, write it (and a 0600 environment file if none\n"
        "exists), create the data dir (0700), then run systemctl daemon-reload and enable --now.",
        "LIVE_MEMORY_DATA_DIR (the data dir, unless --data-dir or the env file names one), HOME,\n"
        "  XDG_CONFIG_HOME (where user units and the env file go), SUDO_USER (--system: the default account),\n"
        "  and the provider variables, only to warn when the env file lacks them",
    ),
    "config": (
        "show, get or set configuration",
        "`show` prints every option's effective value and its source (secrets masked) as the running server\n"
        "sees them (GET /config), else as this shell would start one; `get KEY` prints one; `set KEY=VALUE`\n"
        "goes through the running server (POST /config: it writes its own config.json and applies it; options\n"
        "read at start apply at the next start), else into this shell's data dir config.json.",
        _ALL_OPTIONS_ENV + "\n  LIVE_MEMORY_HOST, LIVE_MEMORY_PORT, LIVE_MEMORY_AUTH_TOKEN   the server asked first",
    ),
    "install": (
        "connect another coding agent (codex, opencode, gemini) to this server",
        "Add Live Memory to the agent's own configuration: its MCP server entry for this server's URL (and the\n"
        "token by the name of the variable that holds it), the hook that tells the memory what the agent reads\n"
        "and edits where the agent has one, and with --instructions a note in the repository's AGENTS.md (Codex,\n"
        "OpenCode: one note for both) or GEMINI.md (Gemini CLI) on when to ask. Idempotent; the user's other\n"
        "settings, comments and layout are left as they are; a refused install writes nothing. Then warns when the\n"
        "agent would not reach the server from this shell (nothing listens, a token variable unset). See\n"
        "docs/agents.md.",
        "LIVE_MEMORY_URL                      the server's URL (else host and port, as below)\n  "
        + _CONNECT_ENV
        + "\n  CODEX_HOME                           where Codex keeps its configuration (default ~/.codex)"
        + "\n  XDG_CONFIG_HOME                      OpenCode's configuration is under it (default ~/.config/opencode)"
        + "\n  GEMINI_CLI_HOME                      the folder holding Gemini CLI's .gemini/ (default your home)",
    ),
    "uninstall": (
        "remove what `install` added to an agent's configuration",
        "Remove exactly what `live-memory install` added, byte for byte (and with --instructions, this agent from\n"
        "the AGENTS.md or GEMINI.md note: the note goes with the last agent that named it).",
        "CODEX_HOME, XDG_CONFIG_HOME, GEMINI_CLI_HOME   where Codex, OpenCode and Gemini CLI keep their\n"
        "  configuration; no LIVE_MEMORY_ variable is read",
    ),
    "demo": (
        "run a scripted demo: a fake model, a throwaway server, two questions",
        "Start a scripted model on loopback, a throwaway server with a temporary data dir, ask two questions\n"
        "about this checkout (or, installed from a wheel, a copy of the installed package) and print the answers\n"
        "and what they saved, then stop everything. Needs no key and no network.",
        "none: the demo ignores LIVE_MEMORY_* and provider variables and sets its own",
    ),
}
