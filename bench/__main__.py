"""`python -m bench` (`make bench`): run every benchmark in turn; each prints a table and writes JSON."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = [
    "bench.overhead",
    "bench.tools_bench",
    "bench.outline_bench",
    "bench.prefix_cache",
    "bench.snapshot_io",
    "bench.workspaces_bench",
    "bench.notify_bench",
    "bench.load",
    "bench.savings",
    "bench.session_bill",
]


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"\n=== {name}", flush=True)
        try:
            importlib.import_module(name).main()
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            print(f"{name} failed: {exc!r}", file=sys.stderr)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
