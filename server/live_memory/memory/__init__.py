"""One workspace's memory, as the prompt holds it.

- `context_window`: the growing conversation (`ContextWindow`): files known, ledger, history, held bytes.
- `ledger`: provenance-tagged facts; `history`: the turns; `file_context`, `cited_lines`, `kept_answer`: what is
  known of a file, of lines an answer cited, of an answer.
- `frozen_block`: how the prompt shows it all; `hot_set` (decides) and `holding` (applies): what stays held.
"""
