"""PostgreSQL cells charged to the result's byte budget as psycopg converts them.

psycopg converts a fetched row cell by cell, each by the loader of its type. On macsql's
connections the loaders of the types whose size has no bound (text, bytea, json, xml, arrays,
records, and any type psycopg does not know, which it reads as text) are wrapped: before a cell
becomes a Python object, its size on the wire times what its Python objects may take (20 for
arrays, JSON and records, whose elements each become an object) is charged to the budget that
`charging` set for the query. A 600 MB `repeat()` cell, or an array of 100 million integers,
stops before its Python copy exists. Fixed-size types (numbers, dates, booleans) keep
psycopg's C loaders and are counted with the row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from psycopg import pq
from psycopg.adapt import Loader

from macsql.database.result_budget import ByteBudget

_BUDGET_ATTRIBUTE = "_macsql_budget"

# oid -> Python bytes per byte on the wire
_TEXT_LIKE = {
    0: 1,  # unknown types (enums, domains, user types): read as text
    17: 1,  # bytea (hex text: two characters a byte)
    19: 1,  # name
    25: 1,  # text
    142: 1,  # xml
    705: 1,  # unknown
    1042: 1,  # bpchar
    1043: 1,  # varchar
    114: 20,  # json: parsed into Python objects
    3802: 20,  # jsonb
    2249: 20,  # record
}
_ARRAY_FACTOR = 20
_OVERHEAD = 64


class _ChargedLoader(Loader):
    """Charges the cell, then lets the type's own loader convert it."""

    inner: type[Any]
    factor: int = 1

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        self._inner = self.inner(oid, context)

    def load(self, data: Any) -> Any:
        budget = getattr(self.connection, _BUDGET_ATTRIBUTE, None)
        if budget is not None:
            budget.charge(_OVERHEAD + self.factor * len(data))
        return self._inner.load(data)


def _charged(inner: type[Any], factor: int) -> type[Loader]:
    return type(f"Charged{inner.__name__}", (_ChargedLoader,), {"inner": inner, "factor": factor})


def install_budget_loaders(dbapi_connection: Any) -> None:
    """Wrap the loaders of unbounded types on one psycopg connection (text format: macsql's
    named cursors read text)."""
    adapters = dbapi_connection.adapters
    wanted = dict(_TEXT_LIKE)
    for info in adapters.types:
        if getattr(info, "array_oid", 0):
            wanted.setdefault(info.array_oid, _ARRAY_FACTOR)
    for oid, factor in wanted.items():
        loader = adapters.get_loader(oid, pq.Format.TEXT)
        if loader is not None and not issubclass(loader, _ChargedLoader):
            adapters.register_loader(oid, _charged(loader, factor))


@contextlib.contextmanager
def charging(dbapi_connection: Any, budget: ByteBudget) -> Iterator[ByteBudget]:
    """Charge the cells this connection converts to `budget` while the block runs."""
    setattr(dbapi_connection, _BUDGET_ATTRIBUTE, budget)
    try:
        yield budget
    finally:
        setattr(dbapi_connection, _BUDGET_ATTRIBUTE, None)
