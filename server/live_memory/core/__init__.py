"""The floor every other package stands on: values and words, no I/O.

- `errors`: the one exception tree (`LiveMemoryError` and its families).
- `records`: frozen value types and the token estimate; `messages`: the neutral request and reply a provider
  exchanges with the engine.
- `prompts`: every byte of prompt text the model sees.
- `credentials`: does a text hold a credential (asked before anything leaves the machine).
"""
