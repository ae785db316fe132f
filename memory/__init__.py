"""macsql.memory: what outlives one run.

Conversations and SQLFixAgent's repair memory in a checkpointer and a store (`persistence`),
the repair memory itself (`repairs`), and the lexical similarity both retrieval steps use
(`similarity`).
"""
