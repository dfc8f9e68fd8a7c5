"""`make demo` (`live-memory demo`) end to end: a scripted model, a throwaway server, two grounded answers."""

from __future__ import annotations

import ast
import re
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from live_memory.cli.demo import DEMO_FILE
from live_memory.cli.main import main
from tests.fakes.process_logging import restored_logging

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "server" / "live_memory"


# The demo and what it runs on: a plain `pip install .` must be enough.
def demo_modules() -> list[Path]:
    """The demo and the testing aids it imports, and those they import in turn."""
    found, todo = [], [PACKAGE / "cli" / "demo.py"]
    while todo:
        module = todo.pop()
        if module in found:
            continue
        found.append(module)
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("live_memory.testing"):
                named = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module or ""]
                for name in named:
                    path = PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py")
                    if path.is_file():
                        todo.append(path)
    return sorted(found)


DEMO_MODULES = demo_modules()


def test_demo_answers_first_by_reading_a_file_then_from_memory_and_stops_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`live-memory demo` by `main()` in this process: its server is a real `live-memory serve` process, its
    questions the `ask` command's code (a new interpreter for the command itself would only add start-up)."""
    # The caller's own settings must not leak into the demo's server.
    monkeypatch.setenv("LIVE_MEMORY_PORT", "1")
    monkeypatch.setenv("LIVE_MEMORY_API_KEY", "not-for-the-demo")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the demo makes its scratch dir
    with restored_logging():
        code = main(["demo"])
    done = capsys.readouterr()
    assert code == 0, done.out + done.err
    out = done.out
    first, second = re.findall(r"^\$ live-memory ask .*?(?=^\$ |^demo: the first)", out, flags=re.S | re.M)
    assert "tool_calls=1" in first and "files_read=1" in first
    assert re.search(rf"`DEFAULT_PORT = 7711` \({re.escape(DEMO_FILE)}:\d+\)", first)  # cites the file and line
    assert "tool_calls=0" in second
    cached = re.search(r"cached=(\d+)%", second)
    assert cached and int(cached.group(1)) > 0
    assert '"127.0.0.1"' in second
    # What it saved against no memory and against a subagent, in this run's own figures.
    answers = re.search(r"with Live Memory, its own context took the two answers: ~(\d+) tokens", out)
    read = re.search(rf"with no memory, it reads {re.escape(DEMO_FILE)} itself: ~([\d,]+) tokens", out)
    assert answers and read and int(answers.group(1)) < int(read.group(1).replace(",", ""))
    assert "an Explore subagent reads the file for each question" in out
    assert re.search(r"Live Memory's own model spent \$\d+\.\d{4} at claude-haiku-4-5 list prices", out)
    assert "Traceback" not in done.err
    # Everything stopped and cleaned up: the server's port is closed, the scratch dir is gone.
    port = int(re.search(r"live-memory serve at http://127\.0\.0\.1:(\d+)", out).group(1))  # type: ignore[union-attr]
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    assert not list(tmp_path.glob("live-memory-demo-*"))


@pytest.mark.parametrize("module", DEMO_MODULES, ids=lambda path: path.name)
def test_demo_needs_nothing_but_the_package_and_the_standard_library(module: Path) -> None:
    """A fresh clone with `pip install .` has no test dependencies: the demo must not import them."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"live_memory", "__future__"} <= set(sys.stdlib_module_names)
