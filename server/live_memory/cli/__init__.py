"""The command line: `live-memory` and its subcommands, and the client of a running server."""
