import pytest

# The shared session's assertions (session.py) report their operands, as a test module's do.
pytest.register_assert_rewrite("tests.agents.session")
