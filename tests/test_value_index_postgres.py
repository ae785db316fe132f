"""The value index on a real PostgreSQL server: built with bounded sampling, refreshed on demand."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from sqlalchemy import text

from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.schema import load_schema
from macsql.database.value_index import clear_value_indexes, open_value_index
from macsql.linking.ranking import question_phrases

pytestmark = pytest.mark.postgres


def test_index_from_a_server_is_bounded_and_finds_values(
    pg_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = pg_spider("world_1")
    with get_engine(ref).connect() as conn:
        cities = conn.execute(text('SELECT count(*) FROM "city"')).scalar()
    assert cities and cities > 1000
    index = open_value_index(ref, load_schema(ref), rows_per_table=40, refresh=True)
    assert index.stats.rebuilt
    conn = sqlite3.connect(index.path)
    per_column = dict(
        conn.execute(
            "SELECT c.tbl || '.' || c.col, count(*) FROM vals v JOIN columns c "
            "ON c.id = v.column_id GROUP BY c.id"
        ).fetchall()
    )
    conn.close()
    # Bounded sampling: at most 40 rows were read from the 4,000-row city table.
    assert 0 < per_column["city.name"] <= 40
    assert all(n <= 40 for n in per_column.values())


def test_server_index_is_reused_until_refreshed(pg_spider: Callable[[str], DatabaseRef]) -> None:
    ref = pg_spider("concert_singer")
    schema = load_schema(ref)
    first = open_value_index(ref, schema, refresh=True)
    found = first.lookup(question_phrases("Which singers are from france?"))
    assert ("singer", "country", "France") in {(m.table, m.column, m.value) for m in found}
    clear_value_indexes()
    again = open_value_index(ref, schema)
    assert not again.stats.rebuilt and again.path == first.path
    assert open_value_index(ref, schema, refresh=True).stats.rebuilt
