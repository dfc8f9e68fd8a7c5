"""Answering from a memory: one question's loop and the window's upkeep.

- `agent_loop`: prompt -> provider -> tools -> ... -> an answer; `tool_runner`: the seam to the tools it is handed.
- `question_names`, `pre_read`, `read_hold`, `answer_reuse`: what a question names, reads ahead, holds, or was
  answered already.
- `prompt_layout`: the request and its cache breakpoints; `compaction` with `summarizer`: staying in budget.
- `admission`: who may run now.
"""
