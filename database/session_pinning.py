"""The settings that decide how a server reads SQL text, pinned on every connection.

The guard reads a statement in sqlglot's dialect and the server runs the text the guard wrote
(`guard_dialects`); both agree only under one reading of strings, quotes and operators. A
setting can change that reading under the guard: PostgreSQL with
`standard_conforming_strings=off` takes a backslash in '...' as an escape, MariaDB with
`NO_BACKSLASH_ESCAPES` does not, `ANSI_QUOTES` makes "..." a name, `PIPES_AS_CONCAT` makes
`||` a concatenation, `sql_mode=ORACLE` changes the grammar. Issue 26 read files and password
hashes through each of them. So every new connection sets them, then reads them back, and is
refused (`SessionSettingError`) when the server did not take them:

- PostgreSQL: `standard_conforming_strings=on` in the startup packet (a client setting, which
  outranks any `ALTER ROLE/DATABASE ... SET`), with `default_transaction_read_only=on`, the
  server-side `statement_timeout` and `application_name=macsql`;
- MySQL/MariaDB: `sql_mode` set to `PINNED_SQL_MODE` and the utf8mb4 character set.
"""

from __future__ import annotations

from typing import Any

from macsql.database.connection_errors import DatabaseUnavailableError

APPLICATION_NAME = "macsql"
"""How macsql's sessions name themselves (PostgreSQL's pg_stat_activity.application_name)."""

SERVER_STATEMENT_TIMEOUT_S = 120
"""The server's own limit on any statement of a macsql session (schema reads included); each
model-written query gets its call's timeout instead."""

CONNECT_TIMEOUT_S = 10
"""Seconds a new connection may take, handshake and login included: a server that accepts the
TCP connection and never answers is given up on after this."""

PINNED_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""MySQL/MariaDB: the default reading of strings ('\\'' escapes, "..." is a string, `||` is OR),
the one sqlglot's MySQL dialect implements; valid on MySQL 5.7, 8 and MariaDB 10+."""


class SessionSettingError(DatabaseUnavailableError):
    """A setting that decides how the server reads SQL text could not be pinned."""


def postgres_options() -> str:
    """The libpq `options` of every macsql session."""
    return (
        "-c default_transaction_read_only=on -c standard_conforming_strings=on "
        f"-c statement_timeout={SERVER_STATEMENT_TIMEOUT_S * 1000}"
    )


def check_postgres_reading(dbapi_connection: Any) -> None:
    """Refuse a PostgreSQL session whose string reading is not the pinned one."""
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('standard_conforming_strings'), "
                "current_setting('default_transaction_read_only')"
            )
            conforming, read_only = cursor.fetchone()
    finally:
        dbapi_connection.rollback()
    if conforming != "on" or read_only != "on":
        raise SessionSettingError(
            f"the server did not take standard_conforming_strings=on and "
            f"default_transaction_read_only=on (it has {conforming!r}, {read_only!r}); macsql "
            "does not run model-written SQL under another reading of strings"
        )


def pin_mysql_session(dbapi_connection: Any) -> None:
    """Set the pinned `sql_mode` and read it back; refuse the connection otherwise."""
    with dbapi_connection.cursor() as cursor:
        cursor.execute(f"SET SESSION sql_mode = '{PINNED_SQL_MODE}'")
        cursor.execute("SELECT @@SESSION.sql_mode, @@SESSION.character_set_client")
        mode, charset = cursor.fetchone()
    if set(str(mode).split(",")) != set(PINNED_SQL_MODE.split(",")) or charset != "utf8mb4":
        raise SessionSettingError(
            f"the server did not take sql_mode={PINNED_SQL_MODE!r} with utf8mb4 (it has "
            f"{mode!r}, {charset!r}); macsql does not run model-written SQL under another "
            "reading of strings and quotes"
        )
