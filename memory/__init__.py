"""macsql.memory: what outlives one run.

Conversations and SQLFixAgent's repair memory in a checkpointer and a store (`persistence`),
the repair memory itself (`repairs`), few-shot example pools (`examples`), and the lexical
similarity both retrieval steps use (`similarity`).
"""
