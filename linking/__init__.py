"""macsql.linking: narrowing a schema to what a question needs, before any agent reads it.

`stage` runs the whole stage (value lookup, then column linking); `ranking` ranks columns
against the question and keeps the best within a character budget, with `terms` (BM25 over a
schema's words, built once per schema version), `groups` (schemas and table-name prefixes ranked
first) and `embeddings` (optional semantic matching); `selection` applies the Selector's reply
(MAC-SQL's keep_all / drop_all / column lists) to a schema.
"""
