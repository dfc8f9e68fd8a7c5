"""Regenerate docs/benchmarks.md, its charts and README.md's session-bill figures from bench/results/*.json.

The entry point of `python -m bench.report`: read the result files, draw the charts, then write the whole page
(or only the sections `--only` names) and the README's block.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.report.charts import write_charts
from bench.report.document import render_document, splice_sections
from bench.report.readme import write_readme

# The package's parent: bench/ (results), and the project root above it (docs, README).
HERE = Path(__file__).parent.parent
RESULTS_DIR = HERE / "results"
DOC_PATH = HERE.parent / "docs" / "benchmarks.md"
README_PATH = HERE.parent / "README.md"
IMG_DIR = HERE.parent / "docs" / "img"


def load_results(directory: Path) -> tuple[dict[str, Any], list[str]]:
    """{name: parsed JSON} for every readable results file, and a note for each unreadable one."""
    results: dict[str, Any] = {}
    problems: list[str] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"`{path.name}` could not be read ({type(exc).__name__}); its section is left out.")
            continue
        if isinstance(data, Mapping):
            results[path.stem] = data
        else:
            problems.append(f"`{path.name}` does not hold a JSON object; its section is left out.")
    return results, problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="directory of <name>.json results")
    parser.add_argument("--doc", type=Path, default=DOC_PATH, help="markdown file to write")
    parser.add_argument("--img", type=Path, default=IMG_DIR, help="directory for the PNG charts")
    parser.add_argument(
        "--readme", type=Path, default=README_PATH, help="README whose session-bill block is regenerated in place"
    )
    parser.add_argument("--dpi", type=int, default=100, help="chart resolution (dots per inch)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated result names (e.g. session_bill): regenerate only these sections of the document "
        "(and the README's block only with session_bill)",
    )
    args = parser.parse_args(argv)
    results, notes = load_results(args.results)
    try:
        charts = write_charts(results, args.img, args.doc.parent, dpi=args.dpi)
    except ImportError:
        charts = {}
        notes.append("Charts left out: matplotlib is not installed (`pip install -e '.[bench]'`).")
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    if args.only:  # the regenerated sections link their charts, redrawn (byte-identical for the same results)
        keys = [k for k in args.only.split(",") if k]
        existing = args.doc.read_text(encoding="utf-8") if args.doc.exists() else render_document({})
        args.doc.write_text(splice_sections(existing, results, keys, charts), encoding="utf-8")
        print(f"wrote {args.doc} (sections: {', '.join(keys)}; {len(charts)} charts in {args.img})")
        if "session_bill" in keys:
            print(write_readme(args.readme, results))
        for note in notes:
            print(f"note: {note}")
        return 0
    args.doc.write_text(render_document(results, charts, notes), encoding="utf-8")
    print(f"wrote {args.doc} ({len(results)} result files, {len(charts)} charts in {args.img})")
    print(write_readme(args.readme, results))
    return 0
