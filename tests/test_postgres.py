"""PostgreSQL as a real server: the loader, and Spider's gold SQL through the executor.

Tests marked `postgres` need `MACSQL_PG_URL` (see tests/pg_support.py); the type-mapping and
command-line checks at the top need no server.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER, concert_db, spider_db
from pg_support import PG_SPIDER_DATABASES, allow_privileged, pg_checksum, writable_engine
from sqlalchemy import text
from timing import generous

from macsql.database.connection import DatabaseRef, get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import check_statement
from macsql.database.loaders.command import main_load
from macsql.database.loaders.plan import (
    MARKER_PREFIX,
    ColumnStats,
    LoaderError,
    choose_type,
    fold_identifier,
    quote_ident,
)
from macsql.database.loaders.postgres import copy_sqlite_to_postgres, database_url

# --- no server needed -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "stats", "expected"),
    [
        ("INTEGER", ColumnStats(integers=5, low=1, high=9), "integer"),
        ("int", ColumnStats(integers=5, low=1, high=2**40), "bigint"),
        ("INTEGER", ColumnStats(integers=5, texts=1), "text"),  # '' among the numbers
        ("INTEGER", ColumnStats(integers=5, reals=1), "double precision"),
        ("REAL", ColumnStats(integers=5, low=1, high=9), "double precision"),
        ("DECIMAL(10,2)", ColumnStats(integers=1, reals=2), "numeric"),
        ("TEXT", ColumnStats(texts=4, integer_texts=4), "bigint"),
        ("VARCHAR(10)", ColumnStats(texts=4, integer_texts=2, real_texts=2), "double precision"),
        ("TEXT", ColumnStats(texts=4, integer_texts=3), "text"),
        ("TEXT", ColumnStats(integers=2, texts=4, integer_texts=4), "bigint"),
        ("DATETIME", ColumnStats(texts=4), "text"),
        ("BOOL", ColumnStats(texts=4), "text"),
        ("BLOB", ColumnStats(blobs=3), "bytea"),
        ("", ColumnStats(blobs=3, texts=1), "text"),
        ("", ColumnStats(integers=3, low=0, high=1), "integer"),
        ("INT", ColumnStats(nulls=3), "bigint"),
        ("NUMERIC", ColumnStats(nulls=3), "numeric"),
        ("NUMBER", ColumnStats(nulls=3), "double precision"),
        ("", ColumnStats(nulls=3), "text"),
        ("DECIMAL(5,1)", ColumnStats(nulls=3), "numeric"),
        ("TEXT", ColumnStats(nulls=3), "text"),
    ],
)
def test_column_types_follow_the_data(declared: str, stats: ColumnStats, expected: str) -> None:
    assert choose_type(declared, stats) == expected


def test_numeric_text_can_be_kept_as_text() -> None:
    assert choose_type("TEXT", ColumnStats(texts=4, integer_texts=4), numeric_text=False) == "text"


def test_identifiers_are_always_quoted() -> None:
    assert quote_ident('we"ird name') == '"we""ird name"'
    assert quote_ident("order") == '"order"'


def test_main_load_without_a_server_url_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MACSQL_PG_URL", raising=False)
    assert main_load(["pets_1"]) == 2
    assert "MACSQL_PG_URL" in capsys.readouterr().err


def test_loader_refuses_a_url_that_is_not_postgres(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="not a PostgreSQL URL"):
        copy_sqlite_to_postgres(concert_db(), "sqlite:///x.db")
    with pytest.raises(LoaderError, match="not found"):
        copy_sqlite_to_postgres(tmp_path / "missing.sqlite", "postgresql://u@h/postgres")


# --- the Spider databases in PostgreSQL -------------------------------------------------------


def sqlite_rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    try:
        return conn.execute(f'SELECT * FROM "{table}"').fetchall()
    finally:
        conn.close()


def sqlite_tables(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
    finally:
        conn.close()


def normalise(value: Any) -> tuple[str, Any]:
    """One value as both engines can agree on: numbers (also numbers written as text) by value."""
    if value is None:
        return ("null", None)
    if isinstance(value, bytes | bytearray | memoryview):
        return ("bytes", bytes(value))
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return ("number", round(float(value), 6))
    text_value = str(value).replace("\x00", "")
    try:
        number = float(text_value)
    except ValueError:
        return ("text", text_value)
    return ("number", round(number, 6)) if math.isfinite(number) else ("text", text_value)


@pytest.mark.postgres
@pytest.mark.parametrize("db_id", PG_SPIDER_DATABASES)
def test_loaded_database_holds_exactly_the_sqlite_data(
    db_id: str, pg_spider: Callable[[str], DatabaseRef]
) -> None:
    ref = pg_spider(db_id)
    path = spider_db(db_id)
    tables = sqlite_tables(path)
    listed = execute_sql(
        ref,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
        max_rows=None,
    )
    assert sorted(name for (name,) in listed.rows) == sorted(fold_identifier(t) for t in tables)
    for table in tables:
        expected = Counter(tuple(normalise(v) for v in row) for row in sqlite_rows(path, table))
        result = execute_sql(
            ref, f"SELECT * FROM {quote_ident(fold_identifier(table))}", max_rows=None
        )
        assert result.outcome in (Outcome.OK, Outcome.EMPTY_RESULT), result.error
        got = Counter(tuple(normalise(v) for v in row) for row in result.rows)
        assert got == expected, f"{db_id}.{table} differs"


@pytest.mark.postgres
def test_keys_are_created_where_the_data_allows(
    pg_spider: Callable[[str], DatabaseRef], pg_admin_url: str
) -> None:
    pg_spider("pets_1")
    # information_schema lists the constraints of tables the role may change: the owner's view
    ref = resolve_database(allow_privileged(database_url(pg_admin_url, "pets_1")))
    constraints = execute_sql(
        ref,
        "SELECT tc.table_name, tc.constraint_type FROM information_schema.table_constraints tc "
        "WHERE tc.table_schema = 'public' AND tc.constraint_type IN ('PRIMARY KEY', "
        "'FOREIGN KEY') ORDER BY 1, 2",
        max_rows=None,
    )
    assert set(constraints.rows) >= {
        ("student", "PRIMARY KEY"),
        ("pets", "PRIMARY KEY"),
        ("has_pet", "FOREIGN KEY"),
    }
    # concert.stadium_id is text in SQLite, integer in stadium: aligned, so the join works
    join = execute_sql(
        pg_spider("concert_singer"),
        "SELECT count(*) FROM concert AS c JOIN stadium AS s ON c.stadium_id = s.stadium_id",
    )
    assert join.outcome == Outcome.OK and join.rows == [(6,)]


SQLITE_ONLY_ERRORS: list[tuple[str, re.Pattern[str]]] = [
    ("double-quoted string literal", re.compile(r'column "(?P<name>[^"]+)" does not exist')),
    ("bare column outside GROUP BY", re.compile(r"must appear in the GROUP BY clause")),
    ("loose typing", re.compile(r"(operator|function) .*does not exist: |\w+\(text\) does not")),
    ("subquery without alias", re.compile(r"subquery in FROM must have an alias")),
    ("JOIN without ON", re.compile(r'syntax error at or near "WHERE"')),
]


def sqlite_only_reason(query: str, error: str) -> str | None:
    for reason, pattern in SQLITE_ONLY_ERRORS:
        match = pattern.search(error)
        if match is None:
            continue
        # a double-quoted name only counts when the query really has that text in double quotes
        if reason == "double-quoted string literal" and (
            f'"{match["name"]}"'.lower() not in query.lower()
        ):
            continue
        return reason
    return None


@pytest.mark.slow
@pytest.mark.postgres
def test_spider_gold_on_postgres_passes_the_guard_and_runs_where_valid(
    pg_spider: Callable[[str], DatabaseRef],
) -> None:
    items = [
        item
        for item in json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
        if item["db_id"] in PG_SPIDER_DATABASES
    ]
    assert len(items) > 300
    ran: Counter[str] = Counter()
    total: Counter[str] = Counter()
    sqlite_only: Counter[str] = Counter()
    unexplained = []
    for item in items:
        db_id, query = item["db_id"], item["query"]
        assert check_statement(query, "postgres").allowed, query
        total[db_id] += 1
        result = execute_sql(pg_spider(db_id), query, timeout=30, max_rows=None)
        if result.outcome.ran:
            ran[db_id] += 1
            continue
        assert result.outcome not in (Outcome.REJECTED, Outcome.TIMEOUT), (query, result.error)
        reason = sqlite_only_reason(query, result.error or "")
        if reason is None:
            unexplained.append((db_id, query, result.outcome, result.error))
        else:
            sqlite_only[reason] += 1
    print("\nSpider dev gold on PostgreSQL (ran / total):")
    for db_id in PG_SPIDER_DATABASES:
        print(f"  {db_id}: {ran[db_id]} / {total[db_id]}")
    print(f"  failing for SQLite-only SQL: {dict(sqlite_only)}")
    assert unexplained == []
    assert ran["pets_1"] == total["pets_1"]
    assert sum(ran.values()) >= 0.55 * sum(total.values())


# --- the loader on messy data ------------------------------------------------------------------

MESSY_DB = "macsql_test_messy"
FOREIGN_DB = "macsql_test_foreign"


def make_messy_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE parent (id INTEGER PRIMARY KEY);
        CREATE TABLE "Mixed Case" (
            "Id" INTEGER PRIMARY KEY, "Name" TEXT, "ÄRA" TEXT, "order" INT, "select" REAL,
            "quote""d" TEXT, amount DECIMAL(10,2), blobby BLOB, big INTEGER, note VARCHAR(3),
            flag BOOL, year TEXT, ref_id INTEGER REFERENCES parent(id), empty_col INT
        );
        CREATE TABLE nullable_key (k TEXT PRIMARY KEY, v TEXT);
        CREATE TABLE orphan (pid INT REFERENCES nowhere(id));
        INSERT INTO parent VALUES (1);
        INSERT INTO nullable_key VALUES (NULL, 'a'), (NULL, 'b');
        INSERT INTO orphan VALUES (7);
        """
    )
    conn.executemany(
        'INSERT INTO "Mixed Case" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
        [
            (
                1,
                "a\x00b",
                "x",
                1,
                1,
                'say "hi"',
                "12.50",
                b"\x00\xff",
                2**40,
                "long",
                "T",
                "2014",
                1,
            ),
            (2, "plain", "y", "", 2.5, "it's", 3, None, 1, "ok", "F", "2015", 5),
        ],
    )
    conn.execute("""INSERT INTO "Mixed Case" ("Id", "Name") VALUES (3, CAST(x'ff41' AS TEXT))""")
    conn.commit()
    conn.close()


@pytest.fixture
def pg_scratch(pg_admin_url: str) -> Iterator[str]:
    """The admin URL; the test databases are dropped before and after."""

    def drop_all() -> None:
        engine = writable_engine(pg_admin_url)
        try:
            with engine.connect() as conn:
                for name in (MESSY_DB, FOREIGN_DB):
                    conn.execute(text(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)"))
        finally:
            engine.dispose()

    drop_all()
    yield pg_admin_url
    for name in (MESSY_DB, FOREIGN_DB):
        get_engine(resolve_database(allow_privileged(database_url(pg_admin_url, name)))).dispose()
    drop_all()


@pytest.mark.postgres
def test_messy_sqlite_loads_robustly(pg_scratch: str, tmp_path: Path) -> None:
    path = tmp_path / "messy.sqlite"
    make_messy_sqlite(path)
    report = copy_sqlite_to_postgres(path, pg_scratch, MESSY_DB)
    assert not report.skipped
    assert report.tables == {"parent": 1, "mixed case": 3, "nullable_key": 2, "orphan": 1}
    warnings = "\n".join(report.warnings)
    assert "primary key of nullable_key" in warnings
    assert "table nowhere does not exist" in warnings
    assert "NOT VALID" in warnings  # ref_id 5 has no parent

    ref = resolve_database(allow_privileged(database_url(pg_scratch, MESSY_DB)))
    types = execute_sql(
        ref,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'mixed case' ORDER BY ordinal_position",
        max_rows=None,
    )
    assert types.rows == [
        ("id", "integer"),
        ("name", "text"),
        ("Ära", "text"),  # PostgreSQL folds ASCII letters only, like SQLite
        ("order", "text"),
        ("select", "double precision"),
        ('quote"d', "text"),
        ("amount", "numeric"),
        ("blobby", "bytea"),
        ("big", "bigint"),
        ("note", "text"),
        ("flag", "text"),
        ("year", "bigint"),
        ("ref_id", "integer"),
        ("empty_col", "bigint"),
    ]
    rows = execute_sql(
        ref,
        'SELECT id, name, "order", amount, blobby, big, year, ÄRA FROM "mixed case" ORDER BY id',
        max_rows=None,
    )
    assert rows.outcome == Outcome.OK, rows.error
    first, second, third = rows.rows
    assert first[1] == "ab"  # PostgreSQL text cannot hold NUL
    assert first[2] == "1" and second[2] == ""  # text kept as text, number as its text
    assert first[3] == Decimal("12.5") and second[3] == Decimal("3")
    assert bytes(first[4]) == b"\x00\xff"
    assert first[5] == 2**40
    assert (first[6], second[6]) == (2014, 2015)
    assert third[1] == "\ufffdA"  # invalid UTF-8 kept, with a replacement character
    assert (first[7], second[7]) == ("x", "y")  # unquoted ÄRA finds the column "Ära"
    assert execute_sql(ref, 'SELECT count(*) FROM "mixed case" WHERE year = 2014').rows == [(1,)]


@pytest.mark.postgres
def test_loader_is_idempotent_and_reloads_a_changed_file(pg_scratch: str, tmp_path: Path) -> None:
    path = tmp_path / "messy.sqlite"
    make_messy_sqlite(path)
    copy_sqlite_to_postgres(path, pg_scratch, MESSY_DB)
    ref = resolve_database(allow_privileged(database_url(pg_scratch, MESSY_DB)))
    checksum = pg_checksum(ref)
    started = time.monotonic()
    again = copy_sqlite_to_postgres(path, pg_scratch, MESSY_DB)
    assert again.skipped and time.monotonic() - started < generous(0.0)
    assert pg_checksum(ref) == checksum

    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO parent VALUES (2)")
    conn.commit()
    conn.close()
    get_engine(ref).dispose()
    reloaded = copy_sqlite_to_postgres(path, pg_scratch, MESSY_DB)
    assert not reloaded.skipped and reloaded.tables["parent"] == 2
    assert execute_sql(ref, "SELECT count(*) FROM parent").rows == [(2,)]


@pytest.mark.postgres
@pytest.mark.needs_data("spider")
def test_loader_never_drops_a_database_it_did_not_create(pg_scratch: str) -> None:
    engine = writable_engine(pg_scratch)
    try:
        with engine.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {quote_ident(FOREIGN_DB)}"))
    finally:
        engine.dispose()
    with pytest.raises(LoaderError, match="not created by the macsql loader"):
        copy_sqlite_to_postgres(spider_db("pets_1"), pg_scratch, FOREIGN_DB)
    report = copy_sqlite_to_postgres(spider_db("pets_1"), pg_scratch, FOREIGN_DB, replace=True)
    assert report.tables["student"] == 34
    engine = writable_engine(pg_scratch)
    try:
        with engine.connect() as conn:
            comment = conn.execute(
                text(
                    "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                    "WHERE datname = :n"
                ),
                {"n": FOREIGN_DB},
            ).scalar()
    finally:
        engine.dispose()
    assert comment.startswith(MARKER_PREFIX)


@pytest.mark.postgres
def test_checksum_sees_a_change(pg_scratch: str, tmp_path: Path) -> None:
    # The hostile-corpus checksum is only worth something if a real write changes it.
    path = tmp_path / "messy.sqlite"
    make_messy_sqlite(path)
    copy_sqlite_to_postgres(path, pg_scratch, MESSY_DB)
    ref = resolve_database(allow_privileged(database_url(pg_scratch, MESSY_DB)))
    before = pg_checksum(ref)
    engine = writable_engine(ref.url)
    try:
        with engine.connect() as conn:
            conn.execute(text("UPDATE orphan SET pid = 9"))
    finally:
        engine.dispose()
    assert pg_checksum(ref) != before


@pytest.mark.postgres
@pytest.mark.needs_data("spider")
def test_main_load_command(pg_admin_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_load(["--admin-url", pg_admin_url, "--spider-dir", str(SPIDER), "pets_1"]) == 0
    assert "pets_1" in capsys.readouterr().out
    assert main_load(["--admin-url", pg_admin_url, "--spider-dir", str(SPIDER), "nope_1"]) == 2
    assert "nope_1" in capsys.readouterr().err
