"""`python -m bench.report`: regenerate docs/benchmarks.md, its charts and README.md's session-bill block."""

from __future__ import annotations

from bench.report.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
