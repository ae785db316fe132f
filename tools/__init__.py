"""macsql.tools: test doubles and loaders, kept out of the runtime layers.

`scripted` holds the scripted chat model and the local OpenAI-compatible server that tests,
examples and benchmarks use instead of a network; `postgres_loader` copies SQLite databases into
PostgreSQL for tests and CI (`macsql load-postgres`). Only the CLI sits above this layer.
"""
