"""SQLite: model-written statements run on connections of their own (`statement_engine`), set up
once: read-only, and SQLite's authorizer set for good, so a text SQLite has prepared on one is
not prepared again (setting an authorizer expires every prepared statement). macsql's own reads
(schemas, inventories: PRAGMAs) use the other pool, which has no authorizer. The guard tells how
many columns a statement returns, so it is prepared once, not also in a probe."""

from __future__ import annotations

import sqlite3
from typing import Any
from unittest import mock

import pytest
from conftest import concert_db

from macsql.database import execution, relation_inventory
from macsql.database.connection import (
    DatabaseRef,
    get_engine,
    resolve_database,
    statement_engine,
)
from macsql.database.execution import Outcome, execute_sql, sqlite_authorizer
from macsql.database.guard import GuardVerdict, check_statement

SQL = "SELECT name, age FROM singer WHERE age > 30 ORDER BY age"


def counting_authorizer(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every question SQLite's parser asks the authorizer (it asks while it prepares)."""
    asked: list[int] = []
    real = sqlite_authorizer()

    def authorize(action: int, *args: Any) -> int:
        asked.append(action)
        return real(action, *args)

    monkeypatch.setattr(execution, "sqlite_authorizer", lambda extra=frozenset(): authorize)
    return asked


def test_a_text_run_again_is_not_prepared_again(
    concert: DatabaseRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = counting_authorizer(monkeypatch)
    first = execute_sql(concert, SQL)
    assert first.outcome == Outcome.OK and first.rows
    prepared_once = len(asked)
    assert prepared_once > 0
    for _ in range(3):
        assert execute_sql(concert, SQL).rows == first.rows
    assert len(asked) == prepared_once  # the authorizer stayed: SQLite kept the statement
    assert statement_engine(concert).pool.checkedout() == 0


def test_the_connection_used_last_runs_the_next_statement(
    concert: DatabaseRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several statements at once leave several connections in the pool (an eval's executor and
    # scorer); the next statement takes the one used last, which has the text prepared.
    engine = statement_engine(concert)
    with engine.connect(), engine.connect(), engine.connect():
        pass
    asked = counting_authorizer(monkeypatch)
    assert execute_sql(concert, SQL).outcome == Outcome.OK
    prepared_once = len(asked)
    assert execute_sql(concert, SQL, max_rows=None).outcome == Outcome.OK
    assert len(asked) == prepared_once


def test_macsql_own_reads_run_without_the_authorizer(concert: DatabaseRef) -> None:
    assert execute_sql(concert, SQL).outcome == Outcome.OK
    with get_engine(concert).connect() as conn:  # schemas are read with PRAGMAs
        columns = conn.exec_driver_sql("PRAGMA table_info(singer)").fetchall()
    assert "Name" in {row[1] for row in columns}
    assert relation_inventory.relations_of(concert, refresh=True).user


def test_the_authorizer_holds_between_statements(concert: DatabaseRef) -> None:
    # Statements that slipped past the guard, one after another on the same connection: none
    # can switch read-only off, so none needs it re-asserted.
    slipped = ["PRAGMA query_only = OFF", "CREATE TEMP TABLE evil (x int)", "DETACH temp"]
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        for statement in slipped:
            result = execute_sql(concert, statement)
            assert result.outcome == Outcome.REJECTED, (statement, result.error)
    assert execute_sql(concert, SQL).outcome == Outcome.OK
    with statement_engine(concert).connect() as conn:
        raw = conn.connection.driver_connection
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            raw.execute("PRAGMA query_only = OFF")
        raw.set_authorizer(None)  # to read the flag; this connection goes away after
        assert raw.execute("PRAGMA query_only").fetchone() == (1,)
        conn.invalidate()


def test_an_invalidated_connection_is_set_up_again(concert: DatabaseRef) -> None:
    assert execute_sql(concert, SQL).outcome == Outcome.OK
    with statement_engine(concert).connect() as conn:
        conn.invalidate()  # as after a statement past its deadline
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        result = execute_sql(concert, "CREATE TEMP TABLE evil (x int)")
    assert result.outcome == Outcome.REJECTED
    assert execute_sql(concert, SQL).outcome == Outcome.OK


def test_the_guard_counts_the_columns_so_the_probe_is_not_run(
    concert: DatabaseRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[str] = []
    real = execution._sqlite_column_count

    def probe(cursor: sqlite3.Cursor, sql: str) -> int:
        probed.append(sql)
        return real(cursor, sql)

    monkeypatch.setattr(execution, "_sqlite_column_count", probe)
    assert [c.lower() for c in execute_sql(concert, SQL).columns] == ["name", "age"]
    assert probed == []
    star = execute_sql(concert, "SELECT * FROM singer")  # the tree does not say: probed
    assert star.outcome == Outcome.OK and len(star.columns) > 2
    assert probed == [star.executed]


@pytest.mark.parametrize(
    ("sql", "columns"),
    [
        ("SELECT name, age FROM singer", 2),
        ("SELECT count(*) FROM singer", 1),
        ("SELECT name FROM singer UNION SELECT name FROM stadium", 1),
        ("SELECT name, age FROM singer EXCEPT SELECT name, capacity FROM stadium", 2),
        ("WITH s AS (SELECT * FROM singer) SELECT s.name, s.age, 1 FROM s", 3),
        ("SELECT * FROM singer", None),
        ("SELECT singer.*, 1 FROM singer", None),
        ("VALUES (1, 2)", None),
    ],
)
def test_result_columns_as_the_guard_reads_them(sql: str, columns: int | None) -> None:
    verdict = check_statement(sql, "sqlite")
    assert verdict.allowed, verdict.reason
    assert verdict.columns == columns
    if columns is not None:
        probe = sqlite3.connect(concert_db()).execute(f"SELECT * FROM ({verdict.sql}) LIMIT 0")
        assert len(probe.description) == columns


@pytest.mark.needs_data("spider")
def test_result_columns_agree_with_sqlite_on_spider_gold_queries() -> None:
    import json

    from conftest import SPIDER

    from macsql.database.relation_inventory import guard_verdict

    told = 0
    for item in json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))[:300]:
        path = SPIDER / "database" / item["db_id"] / f"{item['db_id']}.sqlite"
        if not path.is_file():
            continue
        verdict = guard_verdict(resolve_database(str(path)), item["query"])
        assert verdict.allowed, (item["query"], verdict.reason)
        if verdict.columns is None:
            continue
        told += 1
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            probe = conn.execute(f"SELECT * FROM ({verdict.sql}) LIMIT 0")
            assert len(probe.description) == verdict.columns, verdict.sql
    assert told > 250
