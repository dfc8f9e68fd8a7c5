"""The symbol index's build as a child process: `python -m live_memory.tools.index_child ROOT INDEX [...]`.

Kept apart from `index_build` (which the tools package imports) so that running it as a module does not import
it twice; see `index_build.main` for what it does.
"""

from __future__ import annotations

import sys

from live_memory.tools.index_build import main

if __name__ == "__main__":
    sys.exit(main())
