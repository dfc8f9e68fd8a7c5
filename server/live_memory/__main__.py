"""`python -m live_memory` is the `live-memory` command."""

import sys

from live_memory.cli import main

sys.exit(main())
