"""macsql: text-to-SQL as LangGraph graphs (MAC-SQL, SQLFixAgent, R^3).

    import macsql

    result = macsql.ask("Which author sold the most books?", "demo")
    print(result.sql, result.rows)
    frame = result.to_pandas()

`ask`, its async twin `aask`, and `connect` (one database, many questions) are in
`macsql.api`; `Result` is `macsql.core.results.Result`. They are imported on first use, so
`import macsql` stays cheap.

The layers live in top-level folders (`core/`, `database/`, `graph/`, `nodes/`, ...), installed
under this one import name; the links beside this file let type checkers and the import-layer
contract read them by their import names too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from macsql.api import Connection, SettingsError, aask, ask, connect
    from macsql.core.results import PendingApproval, Result

__all__ = [
    "Connection",
    "PendingApproval",
    "Result",
    "SettingsError",
    "aask",
    "ask",
    "connect",
]

_WHERE = {
    "ask": "macsql.api",
    "aask": "macsql.api",
    "connect": "macsql.api",
    "Connection": "macsql.api",
    "SettingsError": "macsql.api",
    "Result": "macsql.core.results",
    "PendingApproval": "macsql.core.results",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'macsql' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
