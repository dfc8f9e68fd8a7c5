"""Every benchmark result file says what it was measured on: the commit (with -dirty when the code differed) and
the UTC date, written first, whatever the figures held."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from bench.provenance import write_json


def test_a_result_file_is_stamped_with_the_commit_and_the_date(tmp_path: Path) -> None:
    path = write_json(tmp_path / "results" / "x.json", {"figure": 1.5, "commit": "stale", "date": "1999-01-01"})
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == ["commit", "date", "figure"]
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", data["commit"])
    assert data["date"] == time.strftime("%Y-%m-%d", time.gmtime())
