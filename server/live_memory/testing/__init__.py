"""Public testing aids shipped with the package, for the tests, the benchmarks and `live-memory demo`; the
service itself never imports them (the layers contract in pyproject.toml).

- `scripted_provider` (`ScriptedProvider`): a `ChatProvider` that answers from a script, for tests that drive
  the engine without a wire (as pydantic-ai ships `TestModel`).
- `llm_server` (`FakeLLM`, with `gemini_wire` and `responses_wire`): a scripted model endpoint over real HTTP
  that speaks the Anthropic, OpenAI-compatible, Responses and Gemini protocols, simulates their prompt caching
  (`prompt_blocks`, `prompt_cache`) and records every request; `scripted_model`: the demo's standard-library one.
- `live_server` (with `quick_server`, `off_loop`, `ports`): the service on a loopback port in a thread.
- `postgres`: a throwaway PostgreSQL cluster; `git_env`: git children that read no user configuration.

`scripted_model`, `prompt_blocks` and `prompt_cache` use the standard library and the service's provider data
only (the demo runs them from a plain install); the others use the service's own dependencies, and `postgres`
the team store's driver.
"""
