"""Schemas: a broken view, a WAL file on a read-only filesystem, and tables of huge values."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from macsql.database.connection import get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.schema import MAX_SAMPLED_VALUE, build_schema
from macsql.graph.macsql_graph import graph


def test_one_broken_view_is_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "views.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE gone (x INT)")
    conn.execute("CREATE TABLE kept (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO kept (name) VALUES ('a'), ('b')")
    conn.execute("CREATE VIEW broken AS SELECT x FROM gone")
    conn.execute("CREATE VIEW fine AS SELECT name FROM kept")
    conn.execute("DROP TABLE gone")  # SQLite lets the view outlive its table
    conn.commit()
    conn.close()
    ref = resolve_database(str(path))
    schema = build_schema(ref)
    assert [t.name for t in schema.tables] == ["fine", "kept"]
    assert len(schema.notes) == 1
    assert "'broken'" in schema.notes[0] and "gone" in schema.notes[0]
    get_engine(ref).dispose()


def _wal_database(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "wal.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x INT)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    return path


READ_ONLY_CHECK = """
import sys
from macsql.database.connection import resolve_database
from macsql.database.execution import execute_sql
result = execute_sql(resolve_database(sys.argv[1]), "SELECT x FROM t")
print(result.outcome.value)
print(result.error)
"""


def test_wal_database_on_a_read_only_filesystem_says_what_is_wrong(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare and mount to make a read-only filesystem")
    path = _wal_database(tmp_path / "ro")
    folder = str(path.parent)
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && "
        f'exec {sys.executable} -c "$0" {path}'
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, READ_ONLY_CHECK],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()[:200]}")
    outcome, error = done.stdout.strip().splitlines()[:2]
    assert outcome == Outcome.DATABASE_ERROR.value, done.stdout + done.stderr
    assert "WAL mode" in error and "read-only" in error and "wal.sqlite-shm" in error
    assert "Copy the file" in error


def test_a_wal_database_on_a_writable_folder_still_reads(tmp_path: Path) -> None:
    path = _wal_database(tmp_path / "rw")
    result = execute_sql(resolve_database(str(path)), "SELECT x FROM t")
    assert result.outcome == Outcome.OK and result.rows == [(1,)]
    get_engine(resolve_database(str(path))).dispose()


def build_and_measure(ref: Any) -> tuple[Any, list[int]]:
    """The schema, and the length of every text or binary value its sampling fetched."""
    from macsql.database import schema as schema_module

    fetched: list[Any] = []
    real = execute_sql

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        fetched.extend(v for row in result.rows for v in row)
        return result

    monkey = pytest.MonkeyPatch()
    monkey.setattr(schema_module, "execute_sql", spy)
    try:
        schema = build_schema(ref)
    finally:
        monkey.undo()
    return schema, [len(v) for v in fetched if isinstance(v, str | bytes | memoryview)]


def test_sampling_never_fetches_a_long_value(tmp_path: Path) -> None:
    path = tmp_path / "blobs.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE doc (id INTEGER PRIMARY KEY, kind TEXT, body BLOB, note TEXT)")
    conn.executemany(
        "INSERT INTO doc (kind, body, note) VALUES (?, zeroblob(?), ?)",
        [("pdf", 2_000_000, "x" * 5000), ("png", 10, "short")] * 3,
    )
    conn.commit()
    conn.close()
    ref = resolve_database(str(path))
    schema, sizes = build_and_measure(ref)
    assert sizes and max(sizes) <= MAX_SAMPLED_VALUE
    doc = schema.table("doc")
    assert doc is not None
    assert doc.column("kind").examples == ["pdf", "png"]  # type: ignore[union-attr]
    assert doc.column("note").has_nulls is False  # type: ignore[union-attr]
    get_engine(ref).dispose()


def test_ask_on_a_broken_view_database_still_answers(scripted: Any, tmp_path: Path) -> None:
    path = tmp_path / "views.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE gone (x INT)")
    conn.execute("CREATE TABLE kept (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE VIEW broken AS SELECT x FROM gone")
    conn.execute("DROP TABLE gone")
    conn.commit()
    conn.close()
    model, context = scripted(["```sql\nSELECT count(*) FROM kept\n```"], dataset_style="spider")
    out = graph.invoke({"question": "How many?", "db": str(path)}, context=context)
    assert out["status"] == "ok", out.get("error")
    assert "broken" not in model.prompts[0].split("<schema>")[-1].split("</schema>")[0]
    get_engine(resolve_database(str(path))).dispose()


@pytest.mark.postgres
def test_postgres_sampling_skips_long_values_of_every_type(pg_admin_url: str) -> None:
    from pg_support import allow_privileged, writable_engine
    from sqlalchemy import text

    from macsql.database.loaders.postgres import database_url

    name = "bounds_test_sampling"
    admin = writable_engine(pg_admin_url)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = allow_privileged(database_url(pg_admin_url, name))  # a scratch database of its own
    setup = writable_engine(url)
    try:
        with setup.connect() as conn:
            conn.execute(
                text(
                    "CREATE TABLE doc (id serial PRIMARY KEY, kind text, body bytea, note text, "
                    "meta jsonb, tags int[], price numeric, day date)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO doc (kind, body, note, meta, tags, price, day) SELECT "
                    "CASE WHEN g % 2 = 0 THEN 'pdf' ELSE 'png' END, "
                    "decode(repeat(md5(g::text), 100000), 'hex'), repeat(md5(g::text), 200), "
                    "jsonb_build_object('k', repeat('v', 5000)), ARRAY[g, g], g * 1.5, "
                    "date '2020-01-01' + g FROM generate_series(1, 6) g"
                )
            )
        ref = resolve_database(url)
        schema, sizes = build_and_measure(ref)
        assert sizes and max(sizes) <= MAX_SAMPLED_VALUE
        doc = schema.table("doc")
        assert doc is not None
        assert sorted(doc.column("kind").examples) == ["pdf", "png"]  # type: ignore[union-attr]
        for column in ("body", "note", "meta"):
            info = doc.column(column)
            assert info is not None and info.examples == [] and info.has_nulls is False
        get_engine(ref).dispose()
    finally:
        setup.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
