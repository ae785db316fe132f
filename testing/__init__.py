"""macsql.testing: test doubles, outside the runtime layers.

`scripted` holds the scripted chat model and a local OpenAI-compatible HTTP server, which tests,
examples and benchmarks use instead of a network. Nothing in the runtime imports this package.
"""
