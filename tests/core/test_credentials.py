"""No credential leaves the machine: the corpus of credential formats the team store must never receive, each
in a question, an answer and a fact, is caught (detect-secrets and our own rules); ordinary facts are not."""

from __future__ import annotations

import pytest

from live_memory.core.credentials import looks_like_credential
from live_memory.memory.ledger import LedgerFact
from live_memory.team.policy import TeamPolicy

# Fake, well-formed credentials of each kind the issue names (AWS's documentation keys, Stripe's test-like
# shapes, a JWT of jwt.io's example, a key header): what a developer might paste into a question.
CORPUS = [
    "the AWS secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws_secret_access_key = je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "an access key AKIAIOSFODNN7EXAMPLE",
    "connect with postgresql://admin:Sup3rS3cret@db.internal:5432/prod",
    "DATABASE_URL=mysql://root:hunter2@localhost/app",
    "the cache is redis://:p4ssw0rd@cache:6379/0",
    "stripe.api_key = sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "the restricted key rk_live_51H8abcdefghijklmnopqrstuv",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiw"
    "iaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq1nFqDoZ2Rr4Rh\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "password=hunter2",
    "db_password: s3cr3t!",
    "export PASSWORD=Tr0ub4dor&3",
    "passwd = 'letmein123'",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "sk-proj-abcdefghijklmnopqrstuvwx",
]
ORDINARY = [
    "VERSION is defined in app.py and serve() returns it",
    "Cart totals are computed in cents in src/cart.py:40-58.",
    "`password = request.POST['password']` in views.py reads the form field",
    "check_password(user, password) in auth.py compares bcrypt hashes",
    "test_a_store_that_never_answers_holds_no_answer_and_its_queue_drains is in tests/team/test_sync.py",
    "the empty file's sha256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "git@github.com:Org/App.git and https://github.com/org/app name one repository",
    "ThisIsAVeryLongPascalCaseIdentifierName1 lives in models.py",
]
POLICY = TeamPolicy("postgresql://x", 1.0, 1, (), (".env",), "dev", "m1", share_answers=True)
GROUNDS = {"app.py": "a" * 64}


@pytest.mark.parametrize("secret", CORPUS)
def test_no_credential_of_the_corpus_may_leave_in_a_question_an_answer_or_a_fact(secret: str) -> None:
    assert looks_like_credential(secret)
    assert not POLICY.may_share_answer(f"what does app.py use? {secret}", "app.py:1", GROUNDS)
    assert not POLICY.may_share_answer("what does app.py use?", f"It uses\n{secret}\nat app.py:3", GROUNDS)
    assert not POLICY.may_share(LedgerFact(f"app.py configures {secret}".split("\n")[0], GROUNDS))


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_facts_and_answers_are_not_taken_for_credentials(text: str) -> None:
    assert not looks_like_credential(text)
    assert POLICY.may_share(LedgerFact(text, GROUNDS)) and POLICY.may_share_answer("where?", text, GROUNDS)
