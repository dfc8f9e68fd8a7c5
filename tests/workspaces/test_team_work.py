"""Complete grounds, against a real PostgreSQL: an answer to "who calls X" rests on every file of the checkout
that mentions X, so a teammate's server gives it only while those files have the same bytes there and no
other file there mentions X."""

from __future__ import annotations

from pathlib import Path

from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.conftest import TeamRoles
from tests.fakes.engine import until
from tests.fakes.team import arrives, checkout, first_pull, reader, running, sync, team_engine

NET = "def retry():\n    return 1\n"
CALLERS = {
    "net.py": NET,
    "jobs.py": "from net import retry\n\n\ndef run():\n    return retry()\n",
    "api.py": "from net import retry\n\nretry()\n",
}
QUESTION = "Who calls `retry`?"


async def test_an_answer_about_uses_rests_on_every_file_that_uses_the_name(
    tmp_path: Path, team_roles: TeamRoles
) -> None:
    ana_root = off_loop(checkout, tmp_path / "ana", files=CALLERS)
    ben_root = off_loop(checkout, tmp_path / "ben", files=CALLERS)
    # Ana's model reads only the defining file: its answer names no caller's file.
    ana = team_engine(tmp_path / "ana", reader("retry is called from two places", "net.py"), team_roles.urls["ana"],
                      team_share_answers="1")  # fmt: skip
    model = ScriptedProvider(*[text_response("my own answer")] * 3)
    ben = team_engine(tmp_path / "ben", model, team_roles.urls["ben"], team_share_answers="1")
    async with running(ana), running(ben):
        await first_pull(ben, ben_root)
        await until(lambda: sync(ben).figures.listening)
        await ana.answerer.ask(str(ana_root), QUESTION)
        await arrives(ben, ben_root, QUESTION)
        state = await ben.service.find(str(ben_root))
        assert state is not None
        [shared] = state.team_answers[QUESTION.casefold()]
        assert set(shared.sources) == {"net.py", "jobs.py", "api.py"}  # every file that mentions retry

        assert (await ben.answerer.ask(str(ben_root), QUESTION)).model == "team-answer"
        off_loop((ben_root / "api.py").write_text, "from net import retry\n\nretry()\nretry()\n")  # a caller changed
        assert (await ben.answerer.ask(str(ben_root), QUESTION)).answer.startswith("my own answer")
        off_loop((ben_root / "api.py").write_text, CALLERS["api.py"])
        assert (await ben.answerer.ask(str(ben_root), QUESTION)).model == "team-answer"
        off_loop((ben_root / "cli.py").write_text, "from net import retry\nretry()\n")  # a new caller here
        assert (await ben.answerer.ask(str(ben_root), QUESTION)).answer.startswith("my own answer")
        assert len(model.requests) == 2
