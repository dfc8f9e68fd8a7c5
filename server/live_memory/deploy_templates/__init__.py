"""Deployment templates shipped inside the package, so `live-memory install-service` finds them in any install.

The files here are the single source of truth; `deploy/` at the repository root holds byte-identical copies for
people who deploy from a checkout (tests/test_service_install.py keeps them identical):

- `live-memory.user.service`, `live-memory.service`: systemd unit templates rendered by `service_install.py`
  (placeholders `@EXECUTABLE@`, `@PYTHON@`, `@ENV_FILE@`, `@DATA_DIR@`, and `@USER@` in the system unit).
- `live-memory.env.example`: the environment file the supervisor hands the server (provider credential and
  options); `install-service` copies it into place when no env file exists yet.
- `wait_for_health.py` (= `deploy/wait-for-health.py`): a stdlib `/health` poller, the units' readiness check
  (`ExecStartPost`) and a SessionStart-style backstop.

The non-Python files are package data: `pyproject.toml` must list them under `[tool.setuptools.package-data]`.
"""
