"""`python -m bench.virtual_serve`: `live-memory serve` on the replay's virtual clock.

The session bill replays hours of work in seconds. The service times the provider's cache (whether a fold
can still read the cached conversation, how long ago a question was sent) on its monotonic clock, so it
must see the replay's time, not the machine's: this launcher starts the ordinary `serve` command with a
clock that reads the time the replay publishes in the file named by `LIVE_MEMORY_BENCH_CLOCK_FILE`
(`bench.bill_cache.VirtualClock` writes it on every step). A server whose `cmd_serve` takes no clock (an
older checkout measured with `--server-src`) runs on its own clock, and says so on stderr.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

CLOCK_FILE_ENV = "LIVE_MEMORY_BENCH_CLOCK_FILE"


class FileClock:
    """The replay's virtual time, read from a file it rewrites atomically; never runs backwards."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last = 0.0

    def __call__(self) -> float:
        try:
            self.last = max(self.last, float(self.path.read_text(encoding="ascii")))
        except (OSError, ValueError):
            pass  # between a rewrite's steps: the last value stands
        return self.last


def main() -> int:
    from live_memory.cli import main as cli
    from live_memory.settings.config import load_settings

    settings = load_settings()
    path = os.environ.get(CLOCK_FILE_ENV, "")
    if path and "clock" in inspect.signature(cli.cmd_serve).parameters:
        return cli.cmd_serve(settings, clock=FileClock(Path(path)))
    print("virtual_serve: this server takes no clock; it times the cache on its own", file=sys.stderr)
    return cli.cmd_serve(settings)


if __name__ == "__main__":
    sys.exit(main())
