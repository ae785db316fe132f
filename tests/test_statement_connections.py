"""SQLite: model-written statements run on connections of their own (`statement_engine`), set up
once: read-only, and SQLite's authorizer set for good, so a text SQLite has prepared on one is
not prepared again (setting an authorizer expires every prepared statement). macsql's own reads
(schemas, inventories: PRAGMAs) use the other pool, which has no authorizer."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import concert_db

from macsql.database import execution, relation_inventory
from macsql.database.connection import (
    DatabaseRef,
    forget_database,
    get_engine,
    resolve_database,
    statement_engine,
)
from macsql.database.execution import Outcome, execute_sql, sqlite_authorizer
from macsql.database.guard import GuardVerdict

SQL = "SELECT name, age FROM singer WHERE age > 30 ORDER BY age"


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[DatabaseRef]:
    path = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(concert_db(), path)
    ref = resolve_database(str(path))
    yield ref
    forget_database(str(path))


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
