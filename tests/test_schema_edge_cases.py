"""Schema loading on databases shaped unlike the benchmarks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from macsql.database.connection import resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.schema import build_schema
from macsql.prompts.schema_text import render_schema


def test_awkward_names_views_blobs_and_empty_tables(tmp_path: Path) -> None:
    path = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE "order" ("group" TEXT, "select" INTEGER, "Unit Price ($)" REAL);
        CREATE TABLE "line items" (id INTEGER PRIMARY KEY, "order ref" INTEGER
            REFERENCES "order"("select"), payload BLOB);
        CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
        CREATE TABLE empty_one (x INTEGER);
        CREATE VIEW big_orders AS SELECT "group" FROM "order" WHERE "select" > 1;
        """
    )
    conn.executemany('INSERT INTO "order" VALUES (?, ?, ?)', [("a", 1, 2.5), ("b", 2, 3.0)])
    conn.execute('INSERT INTO "line items" VALUES (1, 2, ?)', (b"\x00\x01\x02",))
    conn.executemany("INSERT INTO kv VALUES (?, ?)", [("k1", "v1"), ("k2", "v2")])
    conn.commit()
    conn.close()
    ref = resolve_database(str(path))
    schema = build_schema(ref)
    names = {t.name for t in schema.tables}
    assert {"order", "line items", "kv", "empty_one", "big_orders"} <= names
    assert schema.table("big_orders").column("group").examples == ["b"]
    assert schema.table("order").column("group").examples == ["a", "b"]
    assert schema.table("kv").column("v").examples == ["v1", "v2"]
    assert schema.table("line items").column("payload").examples == []
    assert schema.table("empty_one").column("x").examples == []
    text = render_schema(schema)
    assert "# Table: line items" in text and "Unit Price ($)" in text
    result = execute_sql(ref, 'SELECT "group" FROM "order" ORDER BY "select"')
    assert result.outcome == Outcome.OK and result.rows == [("a",), ("b",)]
