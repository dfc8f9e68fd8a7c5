"""Regenerate docs/benchmarks.md, its charts and README.md's session-bill figures from bench/results/*.json.

Run: `python -m bench.report` after any benchmark (`make bench`, or `python -m bench.<name>`). Every
`bench/results/*.json` that exists is read; a benchmark without a result file gets no section (the page lists
it among those with no committed results) and a missing figure is written "–", never an error, so the document
can be regenerated at any time. Every section, and the README's block, says the commit and the date its figures
were measured on (`commit` and `date` in the result file, written by `bench.common.measured_on`; "–" for a file
written before they were recorded).

Owns: the markdown (pure functions of the result dicts: one module per section, each with its `render_*`;
`document` puts them together in `render_document`) and the charts (`charts.write_charts`, matplotlib with the
Agg backend, a bench-only dependency: without it the document is still written, without images). Output is
deterministic for the same inputs: no timestamps other than those inside the results, sorted inputs, PNGs
without the software-version metadata. README.md quotes the session bill: its bullets between
`<!-- session_bill:begin -->` and `<!-- session_bill:end -->` are written by `readme` from the same result file
(through `session_figures`, the helpers the document's section uses too), and tests/test_readme_figures.py
fails when either file disagrees with what the committed results give. `formatting` holds the helpers every
section shares; `cli` the entry point.
Must never: run a benchmark, or edit anything but docs/benchmarks.md, docs/img/*.png and that README block.
"""

from __future__ import annotations

# What code outside the package (the tests) reads from `bench.report`.
from bench.report.charts import CHART_FILES, write_charts
from bench.report.cli import load_results, main
from bench.report.document import render_document, splice_sections
from bench.report.notify import render_notify
from bench.report.prefix_cache import render_prefix_cache
from bench.report.readme import (
    README_BEGIN,
    README_END,
    README_NOTE,
    README_WIDTH,
    readme_intro,
    render_readme_session_bill,
    splice_readme,
    write_readme,
)
from bench.report.savings import render_savings
from bench.report.session_bill import render_session_bill
from bench.report.session_figures import MODES, SESSION_ARM_NAMES
from bench.report.team_bill import render_team_bill
from bench.report.tools import render_tools

__all__ = [
    "CHART_FILES",
    "MODES",
    "README_BEGIN",
    "README_END",
    "README_NOTE",
    "README_WIDTH",
    "SESSION_ARM_NAMES",
    "load_results",
    "main",
    "readme_intro",
    "render_document",
    "render_notify",
    "render_prefix_cache",
    "render_readme_session_bill",
    "render_savings",
    "render_session_bill",
    "render_team_bill",
    "render_tools",
    "splice_readme",
    "splice_sections",
    "write_charts",
    "write_readme",
]
