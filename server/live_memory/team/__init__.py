"""A team's knowledge through PostgreSQL, never on an answer's path.

- `sync` (`TeamSync`): the service's side: queue, push, pull, listen; `policy`: what may leave and whose rows count.
- `store` (`TeamStore`) with `sql`, `rows` (every row checked at the edge), `listen` (LISTEN/NOTIFY), `url`.
- `queue`: what waits to leave, on disk; `admin`: `live-memory team-setup`; `figures`: what /stats shows;
  `repo_identity`: the key a repository's knowledge is shared under.
"""
