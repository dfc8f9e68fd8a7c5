"""The disk and child processes, safely: every file access of the service goes through this package.

- `jail`: the path jail (`Jail`), the one resolver of workspace paths; `globs`: glob translation.
- `safe_files`: reads, hashes and atomic writes that never follow a swapped link; `dir_sync`: durable renames.
- `walk`: the gitignore-aware walker; `subproc`: bounded child processes (`run_bounded`).
"""
