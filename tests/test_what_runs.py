"""What runs is what was checked (issue 26): a differential test between the guard and each
server, and the session settings that decide how a server reads SQL, pinned.

The oracle: for every statement, either the guard refuses it, or the server refuses the text
the guard wrote, or the server returns exactly the columns of the tree the guard checked. A
comment the guard skipped that the server runs (MariaDB read `--` followed by a no-break space
as code, and ran `LOAD_FILE` through it), or a string the two end in different places (a
backslash under NO_BACKSLASH_ESCAPES or standard_conforming_strings=off), shows up as a column
the guard never saw. The statements are generated: comments, strings and quoted names holding
every Unicode space and control character, executable comments, backslash and dollar quoting,
nested comments; on SQLite, DuckDB, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable, Iterator

import pytest
import sqlglot
from conftest import SPIDER
from mysql_support import admin_connection
from pg_support import writable_engine
from sqlalchemy import text

from macsql.database.connection import DatabaseRef, get_engine, resolve_database
from macsql.database.execution import execute_sql
from macsql.database.guard import check_statement
from macsql.database.guard_dialects import guard_dialect
from macsql.database.loaders.postgres import database_url as pg_database_url
from macsql.database.loaders.postgres import psycopg_url
from macsql.database.session_pinning import (
    PINNED_SQL_MODE,
    SessionSettingError,
    check_postgres_reading,
    pin_mysql_session,
)

SPACES = sorted(
    {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    | {c for c in map(chr, range(0x2000, 0x3001)) if unicodedata.category(c) in ("Zs", "Zl", "Zp")}
    | set("\u00a0\u180e\u200b\u200c\u200d\u2060\ufeff")
)
CONTROLS = sorted(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)))
CHARACTERS = sorted(set(SPACES) | set(CONTROLS))


def generated(dialect: str) -> list[str]:
    """Statements whose comments, strings and names hold each character, and the fixed cases
    of quoting that readers disagree on."""
    name_quote = "`" if dialect == "mysql" else '"'
    statements: list[str] = []
    for c in CHARACTERS:
        # `--` then the character: a comment to the guard; to MariaDB, unless the character
        # is ASCII whitespace, two minus signs and a name (issue 26 read /etc/passwd so).
        aliased = f"FROM (SELECT 1 AS v) AS {name_quote}{c}{name_quote}"
        statements += [
            f"SELECT 1 AS a --{c}1, 2 AS b\n",
            f"SELECT 1 --{c}.v, 2 AS b\n{aliased}",
            f"SELECT 1 AS a /*{c}*/, 2 AS b",
            f"SELECT 'x{c}y' AS a, 2 AS b",
            f"SELECT 1 AS {name_quote}x{c}y{name_quote}, 2 AS b",
        ]
        if dialect == "mysql":
            statements += [
                f"SELECT 1 AS a #{c}1, 2 AS b\n",
                f"SELECT 1 --{c}.v, LOAD_FILE('/etc/passwd') AS b\n{aliased}",
            ]
    statements += [
        "SELECT 'a\\'' AS a, 2 AS b --'",
        "SELECT 'a\\\\' AS a, 2 AS b --'",
        "SELECT 'a''' AS a, 2 AS b",
        "SELECT 'a\\' AS a, 2 AS b -- '",
        "SELECT 1 AS a /*!, 2 AS b */",
        "SELECT 1 AS a /*M!, 2 AS b */",
        "SELECT 1 AS a /*!50000 , 2 AS b */",
        "SELECT 1 AS a /* /* */, 2 AS b */",
        "SELECT 1 AS a/**/, 2 AS b",
        "SELECT 1 AS a --, 2 AS b",
        "SELECT 1 AS a -- \n, 2 AS b",
        "SELECT 1 AS a -- x\r, 2 AS b",
        'SELECT "a\\" AS a, 2 AS b -- " AS c',
        "SELECT E'a\\'' AS a, 2 AS b --'",
        "SELECT $$a'$$ AS a, 2 AS b",
        "SELECT $t$a$$ AS a, 2 AS b --$t$ AS c",
        "SELECT $$ AS a, 2 AS b -- $$ AS c",
        "SELECT U&'\\0041' AS a, 2 AS b",
        "SELECT 'a' 'b' AS a, 2 AS b",
        "SELECT 1 AS a -- ' , 2 AS b\n",
    ]
    return statements


def columns_checked(sql: str, dialect: str) -> list[str | None]:
    """The output columns of the tree: their alias, or None where the server names it."""
    tree = sqlglot.parse_one(sql, read=guard_dialect(dialect))
    return [select.alias.lower() if select.alias else None for select in tree.selects]


def assert_server_runs_what_was_checked(ref: DatabaseRef, statements: list[str]) -> int:
    """The oracle above; returns how many statements ran on the server."""
    ran = 0
    for sql in statements:
        verdict = check_statement(sql, ref.dialect)
        result = execute_sql(ref, sql, timeout=5)
        if not verdict.allowed:
            assert not result.outcome.ran, (sql, result)
            continue
        if not result.outcome.ran:
            continue  # the server refused the written text: nothing ran
        assert verdict.sql is not None and result.executed == verdict.sql
        ran += 1
        checked = columns_checked(verdict.sql, ref.dialect)
        served = [str(name).lower() for name in result.columns]
        shown = [
            name if want is not None else None for name, want in zip(served, checked, strict=False)
        ]
        assert len(served) == len(checked) and shown == checked, (
            repr(sql),
            verdict.sql,
            served,
            result.rows,
        )
    return ran


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabaseRef]:
    pytest.importorskip("duckdb")
    from macsql.cli.main import main

    folder = tmp_path_factory.mktemp("duck-what-runs")
    code = main(["load", "--to", f"duckdb:///{folder}", "--spider-dir", str(SPIDER), "pets_1"])
    assert code == 0
    ref = resolve_database(f"duckdb:///{folder}/pets_1.duckdb")
    yield ref
    get_engine(ref).dispose()


BACKENDS = [
    "sqlite",
    "duckdb",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.slow),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> DatabaseRef:
    if request.param == "sqlite":
        return resolve_database(str(SPIDER / "database" / "pets_1" / "pets_1.sqlite"))
    if request.param == "duckdb":
        return request.getfixturevalue("duck")
    if request.param == "postgres":
        return request.getfixturevalue("pg_spider")("pets_1")
    pytest.importorskip("pymysql")
    return request.getfixturevalue("mysql_spider")("pets_1")


@pytest.mark.needs_data("spider")
def test_the_server_runs_only_what_the_guard_checked(backend: DatabaseRef) -> None:
    statements = generated(backend.dialect)
    assert len(statements) > 300
    ran = assert_server_runs_what_was_checked(backend, statements)
    assert ran > len(statements) // 3  # most statements do run: the oracle is exercised


def test_comments_never_reach_the_server() -> None:
    for dialect in ("sqlite", "postgres", "mysql", "duckdb"):
        for c in CHARACTERS:
            verdict = check_statement(f"SELECT 1 AS a --{c}1, LOAD_FILE('/x') AS b\n", dialect)
            if verdict.allowed:
                assert verdict.sql == "SELECT 1 AS a", (dialect, repr(c), verdict.sql)


# --- the session's reading of SQL, pinned ------------------------------------------------------


class _FakeCursor:
    def __init__(self, row: tuple[object, ...]) -> None:
        self.row = row

    def __enter__(self) -> _FakeCursor:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def execute(self, _sql: str) -> None:
        return None

    def fetchone(self) -> tuple[object, ...]:
        return self.row


class _FakeConnection:
    def __init__(self, row: tuple[object, ...]) -> None:
        self.row = row

    def cursor(self) -> _FakeCursor:
        return _FakeCursor(self.row)

    def rollback(self) -> None:
        return None


def test_a_server_that_does_not_take_the_settings_is_refused() -> None:
    with pytest.raises(SessionSettingError, match="standard_conforming_strings"):
        check_postgres_reading(_FakeConnection(("off", "on")))
    check_postgres_reading(_FakeConnection(("on", "on")))
    with pytest.raises(SessionSettingError, match="sql_mode"):
        pin_mysql_session(_FakeConnection((PINNED_SQL_MODE + ",ANSI_QUOTES", "utf8mb4")))
    with pytest.raises(SessionSettingError, match="utf8mb4"):
        pin_mysql_session(_FakeConnection((PINNED_SQL_MODE, "gbk")))
    pin_mysql_session(_FakeConnection((PINNED_SQL_MODE, "utf8mb4")))


# The class: a backslash read as an escape by one reader and not the other.
BACKSLASH_CASES = [
    "SELECT 'a\\'' AS a, 2 AS b --'",
    "SELECT 'a\\' AS a, 2 AS b -- '",
    "SELECT 'x\\\\', 2 AS b --'",
]


@pytest.mark.postgres
def test_postgres_reads_strings_as_pinned_whatever_the_role_default(
    pg_spider: Callable[[str], DatabaseRef], pg_admin_url: str
) -> None:
    pg_spider("pets_1")
    role, password = "macsql_test_nonconforming", "nonconforming"
    admin = writable_engine(pg_admin_url)
    db = writable_engine(pg_database_url(pg_admin_url, "pets_1"))

    def drop_role() -> None:
        with admin.connect() as conn:
            exists = conn.execute(text(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'")).first()
        if exists:
            with db.connect() as conn:
                conn.execute(text(f"DROP OWNED BY {role} CASCADE"))  # its grants in pets_1
            with admin.connect() as conn:
                conn.execute(text(f"DROP OWNED BY {role} CASCADE"))
                conn.execute(text(f"DROP ROLE {role}"))

    drop_role()
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
        conn.execute(text(f"ALTER ROLE {role} SET standard_conforming_strings = off"))
    with db.connect() as conn:
        conn.execute(text(f"GRANT CONNECT ON DATABASE pets_1 TO {role}"))
        conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {role}"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    url = psycopg_url(pg_database_url(pg_admin_url, "pets_1")).set(username=role, password=password)
    ref = resolve_database(url.render_as_string(hide_password=False))
    try:
        with get_engine(ref).connect() as conn:
            setting = conn.exec_driver_sql("SHOW standard_conforming_strings").scalar()
        assert setting == "on"  # the role's default is off: the session pinned it
        assert assert_server_runs_what_was_checked(ref, BACKSLASH_CASES) >= 1
    finally:
        get_engine(ref).dispose()
        drop_role()
        admin.dispose()
        db.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["NO_BACKSLASH_ESCAPES", "ANSI_QUOTES,PIPES_AS_CONCAT", "ORACLE"])
def test_mariadb_reads_strings_as_pinned_whatever_the_server_default(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str, mode: str
) -> None:
    reader = mysql_spider("pets_1")
    admin = admin_connection(mysql_admin_url)
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.sql_mode")
        (before,) = cur.fetchone()
        cur.execute(f"SET GLOBAL sql_mode = '{mode}'")
    ref = reader
    get_engine(ref).dispose()  # the sessions below start under the new server default
    try:
        with get_engine(ref).connect() as conn:
            mode_in_session = conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar()
        assert set(str(mode_in_session).split(",")) == set(PINNED_SQL_MODE.split(","))
        cases = [*BACKSLASH_CASES, 'SELECT "a" AS a, 2 AS b', "SELECT 'a' || 'b' AS a"]
        assert assert_server_runs_what_was_checked(ref, cases) >= 1
    finally:
        with admin.cursor() as cur:
            cur.execute(f"SET GLOBAL sql_mode = '{before}'")
        admin.close()
        get_engine(ref).dispose()


def test_a_statement_that_does_not_write_back_the_same_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from macsql.database import guard

    real = guard._write
    calls = {"n": 0}

    def drifting(tree: object, dialect: str) -> str:
        calls["n"] += 1
        text = real(tree, dialect)  # type: ignore[arg-type]
        return text if calls["n"] % 2 else text + " "  # the second writing differs

    monkeypatch.setattr(guard, "_write", drifting)
    verdict = check_statement("SELECT name FROM singer_write_back WHERE age > 30", "sqlite")
    assert not verdict.allowed and verdict.kind == "unsupported", verdict
    assert verdict.sql is None and "reads back the same" in (verdict.reason or "")
