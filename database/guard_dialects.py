"""The SQL dialects the guard reads model SQL in and writes the executed statement in.

The guard reads a statement as the server will, and the server runs the text the guard writes
from the tree it checked (`guard.check_statement`). Both halves must match the server's reading
under the settings every connection pins (`connection_settings`): PostgreSQL with
`standard_conforming_strings=on` (a backslash in '...' is a character, as sqlglot reads it),
MySQL/MariaDB with an explicit `sql_mode` without ANSI_QUOTES, NO_BACKSLASH_ESCAPES or
PIPES_AS_CONCAT (as sqlglot's MySQL reads it).

sqlglot's own dialects serve, with one change: its MySQL writer spells `x REGEXP 'p'` as
`REGEXP_LIKE(x, 'p')`, which MariaDB does not have; both servers read the operator.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.generator import Generator


class ServerMySQL(MySQL):
    """MySQL as both MySQL 8 and MariaDB read it."""

    def generator(self, **opts: Any) -> Generator:
        # sqlglot's compiled build (sqlglotc) refuses Python subclasses of its writers, so the
        # one change goes into this writer's own table of handlers, not a subclass. Should a
        # sqlglot release drop that table, every MySQL statement is refused as unwritable.
        writer = super().generator(**opts)
        writer._dispatch = _server_mysql_handlers(writer._dispatch)
        return writer


_changed: dict[int, tuple[Any, Any]] = {}


def _server_mysql_handlers(handlers: Any) -> Any:
    """MySQL's handlers with REGEXP written as the operator; built once per table (sqlglot
    shares one table among the writers of a class; the entry keeps it alive, so its id
    stays its own)."""
    entry = _changed.get(id(handlers))
    if entry is None or entry[0] is not handlers:
        entry = (handlers, {**handlers, exp.RegexpLike: lambda self, e: self.binary(e, "REGEXP")})
        _changed[id(handlers)] = entry
    return entry[1]


_OWN: dict[str, type[Dialect]] = {"mysql": ServerMySQL}


@functools.lru_cache(maxsize=32)
def guard_dialect(name: str) -> Dialect:
    """The dialect object that reads and writes SQL for the database dialect `name`."""
    own = _OWN.get(name)
    if own is not None:
        return own()
    try:
        return Dialect.get_or_raise(name or "")
    except ValueError:
        # A database sqlglot has no dialect for: its generic SQL still parses the usual queries.
        return Dialect.get_or_raise("")
