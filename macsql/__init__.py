"""macsql: text-to-SQL as LangGraph graphs (MAC-SQL, SQLFixAgent, R^3).

The layers live in top-level folders (`core/`, `database/`, `graph/`, `nodes/`, ...), installed
under this one import name; the links beside this file let type checkers and the import-layer
contract read them by their import names too.
"""
