"""What the user configured, resolved once: env > config.json > constants.

- `options`: the typed table of options (`Options`); `option_casters`: strict value parsing.
- `config`: layered loading into `Settings`; `runtime`: the settings and the provider built from them, one value.
- `provider_factory`: the adapter for the configured profile; `prices`: the configured prices and the cache's
  shares of them; `logging_setup`: the process's logging.
"""
