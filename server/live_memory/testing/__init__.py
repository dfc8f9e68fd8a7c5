"""Public testing aids shipped with the package: a prompt model (`prompt_blocks`), a prompt-cache simulator
(`prompt_cache`) and a scripted Anthropic-protocol model server (`scripted_model`).

They serve the fake provider of the tests, the benchmarks and `live-memory demo` (which runs from a plain
install, with no key and no network), so they use the standard library and the service's provider data
only. The service itself never imports them (an import-linter contract in pyproject.toml).
"""
