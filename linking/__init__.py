"""macsql.linking: narrowing a schema to what a question needs, before any agent reads it.

`ranking` ranks columns against the question and keeps the best within a budget; `selection`
applies the Selector's reply (MAC-SQL's keep_all / drop_all / column lists) to a schema.
"""
