import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from conftest import concert_db

from macsql.database.connection import resolve_database
from macsql.database.schema import (
    ColumnInfo,
    SchemaInfo,
    TableInfo,
    _sample_rows,
    build_schema,
    load_schema,
    pick_examples,
)
from macsql.linking.selection import apply_selection
from macsql.prompts.schema_text import render_foreign_keys, render_schema


def test_spider_schema_has_types_keys_and_examples() -> None:
    schema = build_schema(resolve_database(str(concert_db())))
    singer = schema.table("singer")
    assert singer is not None
    assert singer.column("Singer_ID").primary_key
    assert singer.column("Age").type == "INTEGER"
    assert "France" in singer.column("Country").examples
    # Key columns never get examples.
    assert singer.column("Singer_ID").examples == []
    fks = render_foreign_keys(schema)
    assert "singer_in_concert.`Singer_ID` = singer.`Singer_ID`" in fks
    text = render_schema(schema)
    assert text.startswith("# Table: concert\n[")
    assert '(Country: TEXT, value examples ["France"' in text or '"France"' in text


def test_example_rules_follow_mac_sql() -> None:
    assert pick_examples(["a", "b", "a", None, "c"], "TEXT", 6) == ["a", "b", "c"]
    assert pick_examples(list(range(50)), "INTEGER", 6) == []  # numeric, many distinct
    assert pick_examples([1, 2, 1, 3], "INTEGER", 6) == [1, 2, 3]
    assert pick_examples(["https://x.org/a", "https://x.org/b"], "TEXT", 6) == []
    assert pick_examples(["ann@mail.com", "bo@mail.org"], "TEXT", 6) == []
    assert pick_examples(["x" * 80, "y" * 90], "TEXT", 6) == []  # long texts
    assert pick_examples(["2020-01-02", "2021-03-04"], "TEXT", 6) == ["2020-01-02"]
    assert len(pick_examples([f"v{i % 9}" for i in range(90)], "TEXT", 6)) == 6


def test_selection_keeps_keys_and_drops_foreign_key_lines() -> None:
    schema = build_schema(resolve_database(str(concert_db())))
    result = apply_selection(
        schema,
        {"singer": ["Name"], "stadium": "drop_all", "concert": "keep_all", "nope": "keep_all"},
    )
    assert result.applied
    names = [t.name for t in result.schema.tables]
    assert "stadium" not in names and "singer_in_concert" in names
    singer = result.schema.table("singer")
    assert [c.name for c in singer.columns] == ["Singer_ID", "Name"]  # PK stays
    assert "stadium" not in render_foreign_keys(result.schema)
    assert any("nope" in note for note in result.notes)


def test_selection_dropping_everything_is_not_applied() -> None:
    schema = SchemaInfo("x", "sqlite", [TableInfo("t", [ColumnInfo("a", "INT")])], [])
    result = apply_selection(schema, {"t": "drop_all"})
    assert not result.applied
    assert result.schema is schema


def test_bird_descriptions_are_loaded_beside_the_database(tmp_path: Path, bird_dir: Path) -> None:
    db_dir = tmp_path / "california_schools"
    db_dir.mkdir()
    conn = sqlite3.connect(db_dir / "california_schools.sqlite")
    conn.execute('CREATE TABLE frpm ("CDSCode" TEXT PRIMARY KEY, "Charter School (Y/N)" INT)')
    conn.executemany("INSERT INTO frpm VALUES (?, ?)", [("a", 1), ("b", 0)])
    conn.commit()
    conn.close()
    shutil.copytree(
        bird_dir / "dev_databases" / "california_schools" / "database_description",
        db_dir / "database_description",
    )
    schema = build_schema(resolve_database(str(db_dir / "california_schools.sqlite")))
    column = schema.table("frpm").column("Charter School (Y/N)")
    assert column.value_description  # from frpm.csv's value_description
    assert "0" in column.value_description and "1" in column.value_description
    assert "values mean" in render_schema(schema)


def _make_big(path: Path, rows: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, kind TEXT, amount REAL)")
    conn.executemany(
        "INSERT INTO big (kind, amount) VALUES (?, ?)",
        ((f"k{i % 7}", i * 0.5) for i in range(rows)),
    )
    conn.commit()
    conn.close()


def test_value_sampling_reads_a_bounded_number_of_rows(tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite"
    _make_big(path, 50_000)
    columns = [ColumnInfo("kind", "TEXT"), ColumnInfo("amount", "REAL")]
    rows = _sample_rows(resolve_database(str(path)), "big", columns, 400, 10.0)
    assert 0 < len(rows) <= 408
    # Rows come from across the table, not only its start.
    assert max(r[1] for r in rows) > 20_000


def test_cache_is_keyed_by_modification_time(tmp_path: Path, fresh_schema_cache: None) -> None:
    path = tmp_path / "c.sqlite"
    _make_big(path, 10)
    ref = resolve_database(str(path))
    first = load_schema(ref)
    assert load_schema(ref) is first  # memory hit
    time.sleep(0.01)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE extra (x INT)")
    conn.commit()
    conn.close()
    second = load_schema(resolve_database(str(path)))
    assert second is not first
    assert second.table("extra") is not None


def test_the_memory_cache_keeps_the_most_recent_schemas_only(
    tmp_path: Path, fresh_schema_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from macsql.database import schema as schema_module

    monkeypatch.setattr(schema_module, "_CACHE_SIZE", 2)
    monkeypatch.setenv("MACSQL_SCHEMA_CACHE", "0")
    paths = []
    for i in range(3):
        path = tmp_path / f"db{i}.sqlite"
        conn = sqlite3.connect(path)
        conn.execute(f"CREATE TABLE t{i} (a INTEGER)")
        conn.commit()
        conn.close()
        paths.append(path)
    first = load_schema(resolve_database(str(paths[0])))
    load_schema(resolve_database(str(paths[1])))
    assert load_schema(resolve_database(str(paths[0]))) is first  # used again: most recent
    load_schema(resolve_database(str(paths[2])))
    assert len(schema_module._cache) == 2
    assert load_schema(resolve_database(str(paths[0]))) is first  # kept; db1 went out
