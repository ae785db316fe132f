"""The tables and views of a database, read once for the guard's relation allow-list.

`guard_verdict(db, sql, ...)` is the guard as `execute_sql` runs it: with the database's own
inventory, so that only the user's relations (and the reviewed information views) may be read.
An inventory is cached per database (a changed SQLite file is read again); when a statement
names a relation the cached inventory does not know, a PostgreSQL inventory older than
`REFRESH_AFTER_S` is read again first, so a table created meanwhile is found.

A role that may do more than read is refused when it connects (`least_privilege`); when the
user accepted it (`?macsql_allow_privileged=1`), `take_privilege_warning` says so once per
database and process, with the fix.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from sqlalchemy import inspect, text

from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.guard import GuardKind, GuardVerdict, check_statement, make_policy
from macsql.database.guard_limits import DEFAULT_LIMITS, StatementLimits
from macsql.database.guard_relations import Relations, system_schemas
from macsql.database.least_privilege import privileged_note

REFRESH_AFTER_S = 1.0

# Catalog tables, and the eponymous virtual tables that expose pages and statements.
_SQLITE_SYSTEM = frozenset(
    {
        ("main", name)
        for name in (
            "sqlite_master",
            "sqlite_schema",
            "sqlite_sequence",
            "sqlite_dbpage",
            "sqlite_stmt",
            "dbstat",
        )
    }
    | {("main", f"sqlite_stat{i}") for i in range(1, 5)}
    | {("temp", name) for name in ("sqlite_temp_master", "sqlite_temp_schema")}
)

_PG_RELATIONS = text(
    "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p')"
)
_PG_SESSION = text("SELECT current_schemas(true), current_database()")
_PG_USER_FUNCTIONS = text(
    "SELECT DISTINCT lower(p.proname) FROM pg_proc p "
    "JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
)


@dataclass(frozen=True)
class _Entry:
    identity: tuple[str, float, int]
    relations: Relations
    loaded_at: float


_entries: dict[str, _Entry] = {}
_warned: set[str] = set()
_lock = threading.Lock()


def relations_of(db: DatabaseRef, *, refresh: bool = False) -> Relations:
    """The database's inventory, from the cache unless the database changed or `refresh`."""
    return _entry(db, refresh=refresh).relations


def _entry(db: DatabaseRef, *, refresh: bool = False) -> _Entry:
    identity = db.identity()
    with _lock:
        entry = _entries.get(db.url)
    if entry is not None and entry.identity == identity and not refresh:
        return entry
    entry = _Entry(identity, _read(db), time.monotonic())
    with _lock:
        _entries[db.url] = entry
    return entry


def guard_verdict(
    db: DatabaseRef,
    sql: str,
    allowed_functions: Iterable[str] = (),
    allowed_relations: Iterable[str] = (),
    limits: StatementLimits | None = None,
    max_bytes: int | None = None,
) -> GuardVerdict:
    """The guard's verdict on `sql` for this database, with its inventory, the user's lists and
    the statement limits (`max_bytes`, the result budget, bounds what a query may build).

    Raises what the driver raises when the inventory cannot be read (the caller classifies it).
    """
    limits = limits or DEFAULT_LIMITS
    if max_bytes is not None and max_bytes < limits.max_built_bytes:
        limits = replace(limits, max_built_bytes=max_bytes)
    entry = _entry(db)
    extra_functions, extra_relations = tuple(allowed_functions), tuple(allowed_relations)
    verdict = check_statement(
        sql, db.dialect, make_policy(entry.relations, extra_functions, extra_relations, limits)
    )
    if (
        verdict.kind == GuardKind.UNKNOWN_RELATION
        and time.monotonic() - entry.loaded_at > REFRESH_AFTER_S
    ):
        entry = _entry(db, refresh=True)
        verdict = check_statement(
            sql, db.dialect, make_policy(entry.relations, extra_functions, extra_relations, limits)
        )
    return verdict


def take_privilege_warning(db: DatabaseRef) -> str | None:
    """Once per database and process: a warning when macsql was allowed
    (`?macsql_allow_privileged=1`) to connect as a role that may do more than read, with the
    fix. None otherwise."""
    note = privileged_note(db.url)
    with _lock:
        if note is None or db.url in _warned:
            return None
        _warned.add(db.url)
    return (
        f"warning: macsql is connected to {db.safe_url} as {note}, because the URL allows a "
        f"privileged role; only macsql's guard and read-only sessions stop a query from using "
        f"that. Connect as a role that may only read (`macsql load --to URL --grant-select-to "
        f"ROLE`, or GRANT SELECT yourself; see docs/safety.md)."
    )


def clear_inventories() -> None:
    """Forget every cached inventory and warning (tests, long-lived hosts)."""
    with _lock:
        _entries.clear()
        _warned.clear()


def _read(db: DatabaseRef) -> Relations:
    engine = get_engine(db)
    if db.backend == "sqlite":
        with engine.connect() as conn:
            names = conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            ).scalars()
            user = frozenset(
                ("main", name.lower()) for name in names if not name.lower().startswith("sqlite_")
            )
        return Relations(user, _SQLITE_SYSTEM, ("temp", "main"), frozenset({"temp"}))
    if db.backend == "postgresql":
        return _read_postgres(db)
    inspector = inspect(engine)
    schema = (inspector.default_schema_name or "").lower()
    listed = [*inspector.get_table_names(), *inspector.get_view_names()]
    user = frozenset((schema, name.lower()) for name in listed)
    return Relations(user, frozenset(), (schema,), system_schemas(db.dialect))


def _read_postgres(db: DatabaseRef) -> Relations:
    with get_engine(db).connect() as conn:
        search_path, database = conn.execute(_PG_SESSION).one()
        rows = conn.execute(_PG_RELATIONS).all()
        functions = frozenset(conn.execute(_PG_USER_FUNCTIONS).scalars())
    system_names = system_schemas("postgres")
    user: set[tuple[str, str]] = set()
    system: set[tuple[str, str]] = set()
    for schema, name in rows:
        is_system = schema in system_names or schema.startswith(("pg_temp_", "pg_toast"))
        (system if is_system else user).add((schema, name))
    return Relations(
        frozenset(user), frozenset(system), tuple(search_path), system_names, database, functions
    )
