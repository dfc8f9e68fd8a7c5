"""`python -m live_memory` is the `live-memory` command."""

import sys

from live_memory.cli.main import main

sys.exit(main())
