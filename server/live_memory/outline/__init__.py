"""What the code says, read from disk without a model call.

- `cards` (with `card_syntax`): a file's outline; `file_summary`: what a file does, in a few lines.
- `symbol_index`, `symbol_lines`, `symbol_store`: where each name is defined and used, kept in SQLite.
- `directory_tree`, `tree_outline`: the tree the stable prefix shows; `workspace_paths`: paths as questions name them.
"""
