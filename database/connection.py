"""Read-only, pooled connections to the databases macsql queries.

A database is named by a SQLite file path or an SQLAlchemy URL. Engines are created once per
database and reused (SQLAlchemy pools the connections), and every engine is read-only at the
engine level: SQLite is opened with `mode=ro` and `PRAGMA query_only`, PostgreSQL sessions
default to read-only transactions, DuckDB files are opened `read_only` with external access
disabled (`macsql.database.duckdb_backend`), MySQL/MariaDB sessions are READ ONLY
(`macsql.database.mysql_backend`).

Every new server connection is bounded (`session_pinning.CONNECT_TIMEOUT_S`), pins the
settings that decide how the server reads SQL text (`session_pinning`), and is refused when its
role may do more than read (`least_privilege`), unless the URL carries
`?macsql_allow_privileged=1`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from macsql.database.connection_errors import DatabaseUnavailableError, describe_database_error
from macsql.database.demo import DEMO_NAME, ensure_demo_database
from macsql.database.drivers import check_driver, normalise_url
from macsql.database.file_kinds import TABLE_FILE_KINDS, file_kind
from macsql.database.least_privilege import ALLOW_PRIVILEGED_PARAM

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Engine

# SQLAlchemy (and the optional backends) are imported where a URL is parsed or an engine is
# made: a SQLite file with a cached schema reaches its first model request without them.


class DatabaseNotFoundError(ValueError):
    """The database named by the user does not exist or cannot be addressed."""


# sqlglot's dialect names for SQLAlchemy's backend names.
_SQLGLOT_DIALECTS = {
    "sqlite": "sqlite",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mssql": "tsql",
    "oracle": "oracle",
    "duckdb": "duckdb",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
}

_DISPLAY_NAMES = {
    "sqlite": "SQLite",
    "postgres": "PostgreSQL",
    "mysql": "MySQL",
    "tsql": "SQL Server",
    "duckdb": "DuckDB",
}


@dataclass(frozen=True)
class DatabaseRef:
    """A resolved database: its SQLAlchemy URL and what macsql needs to know about it."""

    url: str
    backend: str
    sqlite_path: Path | None = None
    allow_privileged: bool = False
    """The URL carries `macsql_allow_privileged=1`: a role that may do more than read is
    accepted (with a warning) instead of refused."""

    @property
    def driver_url(self) -> str:
        """The URL the driver gets: macsql's own query parameters removed."""
        if self.sqlite_path is not None or ALLOW_PRIVILEGED_PARAM not in self.url:
            return self.url
        from sqlalchemy.engine import make_url

        url = make_url(self.url)
        return url.difference_update_query([ALLOW_PRIVILEGED_PARAM]).render_as_string(
            hide_password=False
        )

    @property
    def dialect(self) -> str:
        """sqlglot's name for the database's SQL dialect."""
        return _SQLGLOT_DIALECTS.get(self.backend, self.backend)

    @property
    def dialect_display(self) -> str:
        return _DISPLAY_NAMES.get(self.dialect, self.dialect)

    @property
    def name(self) -> str:
        """A short, password-free name: the file stem or the URL's database name."""
        if self.sqlite_path is not None:
            return self.sqlite_path.stem
        from sqlalchemy.engine import make_url

        if self.backend == "duckdb":
            return Path(make_url(self.url).database or self.backend).stem
        return make_url(self.url).database or self.backend

    @property
    def safe_url(self) -> str:
        if self.sqlite_path is not None:
            return self.url  # a file path carries no password
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    @property
    def description_dir(self) -> Path | None:
        """BIRD's `database_description/` folder, when one sits beside a SQLite file."""
        if self.sqlite_path is None:
            return None
        folder = self.sqlite_path.parent / "database_description"
        return folder if folder.is_dir() else None

    def identity(self) -> tuple[str, float, int]:
        """Identity plus modification stamp: a changed file yields a new identity."""
        if self.sqlite_path is not None:
            stat = self.sqlite_path.stat()
            return (str(self.sqlite_path), stat.st_mtime, stat.st_size)
        duck_file = _duckdb_file(self.url) if self.backend == "duckdb" else None
        if duck_file is not None and duck_file.is_file():
            stat = duck_file.stat()
            return (self.safe_url, stat.st_mtime, stat.st_size)
        return (self.safe_url, 0.0, 0)


def _duckdb_file(url: str) -> Path | None:
    from macsql.database.duckdb_backend import duckdb_path

    return duckdb_path(url)


@lru_cache(maxsize=4096)
def _file_ref(text: str) -> DatabaseRef:
    """A database file by what its header says it is (`database/file_kinds.py`)."""
    path = Path(text)
    kind = file_kind(path)
    if kind == "duckdb":
        return resolve_database(f"duckdb:///{path.resolve()}")
    if kind in TABLE_FILE_KINDS:
        raise DatabaseNotFoundError(
            f"{text} is a {kind.upper() if kind == 'csv' else kind.title()} file, a table "
            "rather than a database: `macsql ask --db` and macsql.connect() load it into "
            'DuckDB (pip install "macsql[duckdb]"); elsewhere, load it with '
            "macsql.database.loaders.tables.load_tables"
        )
    return _sqlite_ref(text)


@lru_cache(maxsize=4096)
def _sqlite_ref(text: str) -> DatabaseRef:
    # realpath costs a syscall per path component; the executor resolves on every query.
    path = Path(text).expanduser().resolve()
    return DatabaseRef(url=f"sqlite:///{path}", backend="sqlite", sqlite_path=path)


def resolve_database(db: str) -> DatabaseRef:
    """Turn a SQLite path, an SQLAlchemy URL, or `demo` (the project's own demo database, made
    on first use) into a `DatabaseRef`, or raise clearly."""
    text = (db or "").strip()
    if not text:
        raise DatabaseNotFoundError("no database given")
    if text == DEMO_NAME and not Path(text).exists():
        # The same name works everywhere: the CLI, Studio, the Python API, the executor.
        text = str(ensure_demo_database())
    if "://" not in text:
        path = Path(text).expanduser()
        try:
            found = path.is_file()
        except OSError as exc:  # a name too long for the file system, a loop of links, ...
            shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"
            raise DatabaseNotFoundError(
                f"cannot use {shown} as a database: {exc.strerror}"
            ) from None
        if not found:
            if path.is_dir():  # "not found" would send the user looking for a missing file
                raise DatabaseNotFoundError(f"{text} is a folder, not a database file")
            raise DatabaseNotFoundError(f"database file not found: {text}")
        # Cache by absolute path, so a changed working directory cannot reuse a stale entry.
        return _file_ref(str(path.absolute()))
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url: URL = make_url(text)
    except ArgumentError as exc:
        raise DatabaseNotFoundError(f"not a database URL: {text} ({exc})") from exc
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise DatabaseNotFoundError("an in-memory SQLite database has no tables to query")
        return resolve_database(url.database)
    problem = check_driver(url)
    if problem:
        raise DatabaseNotFoundError(problem)
    if backend == "duckdb":
        # A read-only open of a missing file fails anyway; say so before DuckDB does.
        duck_file = _duckdb_file(text)
        if duck_file is None:
            raise DatabaseNotFoundError("an in-memory DuckDB database has no tables to query")
        if not duck_file.is_file():
            raise DatabaseNotFoundError(f"database file not found: {duck_file}")
        if _is_sqlite_file(duck_file):
            raise DatabaseNotFoundError(
                f"{duck_file} is a SQLite database, not a DuckDB one: pass the path itself "
                f"(or sqlite:///{duck_file}) as the database"
            )
    flag = str(url.query.get(ALLOW_PRIVILEGED_PARAM, "")).strip().lower()
    return DatabaseRef(
        url=normalise_url(text), backend=backend, allow_privileged=flag in ("1", "true", "yes")
    )


def _is_sqlite_file(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def _sqlite_uri(path: Path) -> str:
    # A file URI, percent-encoded: a path with `?`, `#` or `%` still names that file.
    return f"{path.as_uri()}?mode=ro"


def _sqlite_engine(path: Path, *, lifo: bool = False) -> Engine:
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import QueuePool

    # mode=ro makes SQLite itself refuse writes; query_only also blocks writes through
    # ATTACHed databases and temp tables. The creator opens the exact file: SQLAlchemy's URL
    # form would cut a path at its first `?` or `#`.
    uri = _sqlite_uri(path)
    engine = create_engine(
        "sqlite+pysqlite://",
        creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
        poolclass=QueuePool,
        pool_size=8,
        max_overflow=32,
        pool_use_lifo=lifo,
    )

    @event.listens_for(engine, "connect")
    def _read_only(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA query_only = ON")

    return engine


def _server_engine(ref: DatabaseRef) -> Engine:
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url

    if ref.backend == "postgresql":
        from macsql.database.least_privilege import enforce, postgres_privileges
        from macsql.database.session_pinning import (
            APPLICATION_NAME,
            CONNECT_TIMEOUT_S,
            check_postgres_reading,
            postgres_options,
        )

        url = make_url(ref.driver_url)
        if url.drivername == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
        engine = create_engine(
            url,
            connect_args={
                "options": postgres_options(),
                "connect_timeout": CONNECT_TIMEOUT_S,
                "application_name": APPLICATION_NAME,
            },
            pool_size=8,
            max_overflow=32,
            pool_pre_ping=True,
        )

        @event.listens_for(engine, "connect")
        def _checked(dbapi_conn: Any, _record: Any) -> None:
            from macsql.database.postgres_budget import install_budget_loaders

            # A refusal here makes SQLAlchemy close the new connection and raise it to the caller.
            check_postgres_reading(dbapi_conn)
            role, problems = postgres_privileges(dbapi_conn)
            enforce(ref.url, ref.safe_url, f"the role {role!r}", problems, ref.allow_privileged)
            install_budget_loaders(dbapi_conn)

        return engine
    if ref.backend == "duckdb":
        from macsql.database.duckdb_backend import duckdb_engine

        return duckdb_engine(ref.driver_url, ref.url, ref.safe_url, ref.allow_privileged)
    if ref.backend in ("mysql", "mariadb"):
        from macsql.database.mysql_backend import mysql_engine

        return mysql_engine(ref.driver_url, ref.url, ref.safe_url, ref.allow_privileged)
    return create_engine(ref.driver_url, pool_pre_ping=True)


def get_engine(ref: DatabaseRef) -> Engine:
    """The pooled, read-only engine of a database, created on first use."""
    key = ref.url
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _sqlite_engine(ref.sqlite_path) if ref.sqlite_path else _server_engine(ref)
            _engines[key] = engine
        return engine


STATEMENTS_ONLY = "macsql_statements_only"
"""Set in the `info` of a connection that runs nothing but guarded statements."""
_STATEMENTS_SUFFIX = "#statements"


def statement_engine(ref: DatabaseRef) -> Engine:
    """The engine that model-written statements run on (`execute_sql`).

    SQLite: a pool of its own, apart from macsql's own reads (schemas, inventories: PRAGMAs),
    whose connections run nothing but guarded statements. So SQLite's authorizer, once set on
    one, stays set: setting it expires every statement the connection has prepared, and so did
    each statement's set-and-clear. Other backends: `get_engine`'s pool.
    """
    if ref.sqlite_path is None:
        return get_engine(ref)
    key = ref.url + _STATEMENTS_SUFFIX
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            from sqlalchemy import event

            # The connection used last: what SQLite prepared and cached on it is warm.
            engine = _sqlite_engine(ref.sqlite_path, lifo=True)

            @event.listens_for(engine, "connect")
            def _statements_only(_dbapi_conn: Any, record: Any) -> None:
                record.info[STATEMENTS_ONLY] = True

            _engines[key] = engine
        return engine


def sqlite_open_hint(path: Path) -> str | None:
    """What is wrong when SQLite says "unable to open database file" for a file that exists,
    and what to do, when it can be told; else None."""
    try:
        with path.open("rb") as file:
            header = file.read(20)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    folder = path.parent
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_fs = False
    wal = len(header) == 20 and header[18] == 2  # the file format's read version: 2 is WAL
    if wal and (read_only_fs or not os.access(folder, os.W_OK)):
        return (
            f"{path.name} is in WAL mode and its folder {folder} is read-only: SQLite must "
            f"create {path.name}-shm beside it even to read. Copy the file to a writable "
            "folder, make the folder writable, or switch a writable copy to rollback "
            "journaling (PRAGMA journal_mode=DELETE)."
        )
    return None


def _check_sqlite_file(path: Path) -> None:
    # The sqlite3 module itself: a user's file is checked without importing SQLAlchemy.
    connection = sqlite3.connect(_sqlite_uri(path), uri=True)
    try:
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    finally:
        connection.close()


def check_database(ref: DatabaseRef, timeout: float | None = None) -> None:
    """Open `ref` and read its catalogue once, so that a wrong password, an unknown database,
    a file that is not a database, a missing driver or a role that may write is one clear
    `DatabaseUnavailableError` before any model is asked. With `timeout`, a server that does
    not answer within it is reported as such (the attempt ends at the connect timeout)."""
    if timeout is None:
        _open_once(ref)
        return
    outcome: dict[str, BaseException | None] = {}
    done = threading.Event()

    def attempt() -> None:
        try:
            _open_once(ref)
            outcome["error"] = None
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=attempt, name="macsql-db-check", daemon=True).start()
    if not done.wait(timeout):
        raise DatabaseUnavailableError(
            f"cannot open {ref.safe_url}: the server did not answer within {timeout:g}s"
        )
    error = outcome.get("error")
    if error is not None:
        raise error


def _open_once(ref: DatabaseRef) -> None:
    try:
        if ref.sqlite_path is not None:
            try:
                _check_sqlite_file(ref.sqlite_path)
            except sqlite3.OperationalError as exc:
                hint = sqlite_open_hint(ref.sqlite_path) if "unable to open" in str(exc) else None
                if hint is None:
                    raise
                raise DatabaseUnavailableError(hint) from exc
        else:
            from sqlalchemy import text

            with get_engine(ref).connect() as connection:
                connection.execute(text("SELECT 1")).fetchall()
    except DatabaseUnavailableError as exc:
        raise DatabaseUnavailableError(f"cannot open {ref.safe_url}: {exc}") from exc
    except Exception as exc:  # every driver has its own error classes
        raise DatabaseUnavailableError(
            f"cannot open {ref.safe_url}: {describe_database_error(exc)}"
        ) from exc


def forget_database(db: str) -> None:
    """Close and drop the pooled connections of one database (a caller done with it)."""
    try:
        ref = resolve_database(db)
    except (DatabaseNotFoundError, DatabaseUnavailableError):
        return
    with _engines_lock:
        engines = [_engines.pop(key, None) for key in (ref.url, ref.url + _STATEMENTS_SUFFIX)]
    for engine in engines:
        if engine is not None:
            engine.dispose()


def dispose_all() -> None:
    """Close every pooled connection (tests and long-lived hosts call this on shutdown)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def _forget_engines_in_child() -> None:
    """A forked process must not share its parent's pooled connections (SQLite and psycopg
    both forbid it): drop them without closing what the parent still uses."""
    global _engines_lock
    _engines_lock = threading.Lock()  # another thread may have held it at the fork
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


os.register_at_fork(after_in_child=_forget_engines_in_child)
