"""`live-memory` commands run through `main()` in the test process configure the process's logging for the
command: the root level, and a stderr handler bound to the stream of that moment (a capture that closes when
the test ends). Left in place, every later test in the worker would log at INFO into a closed stream."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def restored_logging() -> Iterator[None]:
    """Put the root logger's level and handlers back as they were when the block began."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
