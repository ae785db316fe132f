"""The tables and views of a database, read once for the guard's relation allow-list.

`guard_verdict(db, sql, ...)` is the guard as `execute_sql` runs it: with the database's own
inventory, so that only the user's relations (and the reviewed information views) may be read.
An inventory is cached per database (a changed SQLite file is read again); when a statement
names a relation the cached inventory does not know, a PostgreSQL inventory older than
`REFRESH_AFTER_S` is read again first, so a table created meanwhile is found.

On PostgreSQL the inventory also notes whether the role is a superuser or owns the tables:
the guard and READ ONLY transactions are then the only protection, since the role itself may
run maintenance functions or read every catalog. `take_privilege_warning` gives that note once
per database and process, with the fix.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import inspect, text

from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.guard import GuardKind, GuardVerdict, check_statement, make_policy
from macsql.database.guard_relations import Relations, system_schemas

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
_PG_SESSION = text(
    "SELECT current_schemas(true), current_database(), current_user, "
    "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
)
_PG_USER_FUNCTIONS = text(
    "SELECT DISTINCT lower(p.proname) FROM pg_proc p "
    "JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
)
_PG_OWNED = text(
    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'v', 'm', 'p') AND n.nspname NOT LIKE 'pg\\_%' "
    "AND n.nspname <> 'information_schema' AND pg_has_role(c.relowner, 'USAGE')"
)


@dataclass(frozen=True)
class _Entry:
    identity: tuple[str, float, int]
    relations: Relations
    loaded_at: float
    privilege: str | None


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
    relations, privilege = _read(db)
    entry = _Entry(identity, relations, time.monotonic(), privilege)
    with _lock:
        _entries[db.url] = entry
    return entry


def guard_verdict(
    db: DatabaseRef,
    sql: str,
    allowed_functions: Iterable[str] = (),
    allowed_relations: Iterable[str] = (),
) -> GuardVerdict:
    """The guard's verdict on `sql` for this database, with its inventory and the user's lists.

    Raises what the driver raises when the inventory cannot be read (the caller classifies it).
    """
    entry = _entry(db)
    extra_functions, extra_relations = tuple(allowed_functions), tuple(allowed_relations)
    verdict = check_statement(
        sql, db.dialect, make_policy(entry.relations, extra_functions, extra_relations)
    )
    if (
        verdict.kind == GuardKind.UNKNOWN_RELATION
        and time.monotonic() - entry.loaded_at > REFRESH_AFTER_S
    ):
        entry = _entry(db, refresh=True)
        verdict = check_statement(
            sql, db.dialect, make_policy(entry.relations, extra_functions, extra_relations)
        )
    return verdict


def take_privilege_warning(db: DatabaseRef) -> str | None:
    """Once per database and process: a warning when macsql connects to PostgreSQL as a
    superuser or as the owner of the tables, with the fix. None otherwise."""
    if db.backend != "postgresql":
        return None
    try:
        privilege = _entry(db).privilege
    except Exception:
        return None  # the run has already reported the unreachable database
    with _lock:
        if privilege is None or db.url in _warned:
            return None
        _warned.add(db.url)
    return (
        f"warning: macsql is connected to {db.safe_url} as {privilege}. Such a role may run "
        f"maintenance functions and read every catalog; only macsql's guard and READ ONLY "
        f"transactions stop it. Give a role read access only (`macsql load-postgres "
        f"--grant-select-to ROLE`, or GRANT SELECT yourself) and connect as that role."
    )


def clear_inventories() -> None:
    """Forget every cached inventory and warning (tests, long-lived hosts)."""
    with _lock:
        _entries.clear()
        _warned.clear()


def _read(db: DatabaseRef) -> tuple[Relations, str | None]:
    engine = get_engine(db)
    if db.backend == "sqlite":
        with engine.connect() as conn:
            names = conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            ).scalars()
            user = frozenset(
                ("main", name.lower()) for name in names if not name.lower().startswith("sqlite_")
            )
        return Relations(user, _SQLITE_SYSTEM, ("temp", "main"), frozenset({"temp"})), None
    if db.backend == "postgresql":
        return _read_postgres(db)
    inspector = inspect(engine)
    schema = (inspector.default_schema_name or "").lower()
    listed = [*inspector.get_table_names(), *inspector.get_view_names()]
    user = frozenset((schema, name.lower()) for name in listed)
    return Relations(user, frozenset(), (schema,), system_schemas(db.dialect)), None


def _read_postgres(db: DatabaseRef) -> tuple[Relations, str | None]:
    with get_engine(db).connect() as conn:
        search_path, database, role, superuser = conn.execute(_PG_SESSION).one()
        rows = conn.execute(_PG_RELATIONS).all()
        owned = conn.execute(_PG_OWNED).scalar() or 0
        functions = frozenset(conn.execute(_PG_USER_FUNCTIONS).scalars())
    system_names = system_schemas("postgres")
    user: set[tuple[str, str]] = set()
    system: set[tuple[str, str]] = set()
    for schema, name in rows:
        is_system = schema in system_names or schema.startswith(("pg_temp_", "pg_toast"))
        (system if is_system else user).add((schema, name))
    privilege = None
    if superuser:
        privilege = f"the superuser role {role!r}"
    elif owned:
        privilege = f"the role {role!r}, which owns {owned} of its tables or views"
    relations = Relations(
        frozenset(user), frozenset(system), tuple(search_path), system_names, database, functions
    )
    return relations, privilege
