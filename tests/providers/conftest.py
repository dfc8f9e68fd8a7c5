"""Provider tests build SDK clients on the event loop. The SDKs' HTTP stack imports `httpcore2`
lazily, and that first import reads package metadata from disk: a blocking call the loop guard
would pin on whichever test happens to run first, so it is imported here, before any loop runs."""

from __future__ import annotations

import httpcore2  # noqa: F401
