"""Workspaces and the one way in to them.

- `service` (`WorkspaceService`): open, notify, persist, unload; `answerer`: one question, top to bottom.
- `workspace` (`WorkspaceState`), `loading`, `snapshot` with `store`, `tree_cache`: a memory found, loaded, kept.
- `ingest`, `watcher`, `preload`: what reaches a memory besides questions; `team_work`: a workspace's side of
  the team store.
- `spend`, `telemetry`, `keep_warm`: what calls cost, what the status page shows, keeping the cache warm.
"""
