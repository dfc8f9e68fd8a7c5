"""The team store's URL: every password masked wherever the URL is shown, the rest kept."""

from __future__ import annotations

import pytest

from live_memory.team.url import mask_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://ana:s3cret@db.example:5432/team", "postgresql://ana:***@db.example:5432/team"),
        ("postgres://ana:p%40ss%2Fw@db/team?sslmode=require", "postgres://ana:***@db/team?sslmode=require"),
        ("postgresql://ana:raw@pass/word@db/team", "postgresql://ana:***@db/team"),
        ("postgresql://ana:pw@h1:5432,h2:5433/team", "postgresql://ana:***@h1:5432,h2:5433/team"),
        (
            "postgresql://db/team?user=ana&password=s3cret&sslmode=verify-full&sslpassword=k3y",
            "postgresql://db/team?user=ana&password=***&sslmode=verify-full&sslpassword=***",
        ),
        ("postgresql://db/team?PassWord=s3cret", "postgresql://db/team?PassWord=***"),
        ("postgresql://ana@db/team", "postgresql://ana@db/team"),
        ("postgresql:///team?host=/run/postgresql", "postgresql:///team?host=/run/postgresql"),
        ("host=db user=ana password=s3cret dbname=team", "host=db user=ana password=*** dbname=team"),
        ("host=db password = 'two words' dbname=team", "host=db password = *** dbname=team"),
    ],
)
def test_mask_url_hides_every_password_and_keeps_the_rest(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_mask_url_hides_a_password_holding_url_delimiters() -> None:
    masked = mask_url("postgresql://ana:pa?ss-word@db/team")

    assert "pa?ss" not in masked and "ss-word" not in masked and masked.startswith("postgresql://ana:")
