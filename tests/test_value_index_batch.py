"""The value index reads a question's exact forms and trigram probes in two statements, with
exactly the rows one statement per form or probe reads."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from macsql.database import value_index
from macsql.database.connection import resolve_database
from macsql.database.schema import load_schema
from macsql.database.value_index import ValueIndex, _exact_rows, _probe_rows, open_value_index

WORDS = ["fresno", "county", "office", "paulo", "kabul", "zurich", "unified", "angeles", "alameda"]


@pytest.fixture
def index(tmp_path: Path) -> ValueIndex:
    rng = random.Random(7)
    path = tmp_path / "many.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT, region TEXT)")
    conn.executemany(
        "INSERT INTO places (name, region) VALUES (?, ?)",
        [
            (" ".join(rng.sample(WORDS, rng.randint(1, 3))), rng.choice(WORDS[:4]))
            for _ in range(400)
        ],
    )
    conn.commit()
    conn.close()
    db = resolve_database(str(path))
    return open_value_index(db, load_schema(db))


def _generated(seed: int) -> list[str]:
    """Forms and probes as a question makes them: words, word pairs, halves, typos, plurals,
    quotes, repeats, and words the index does not hold."""
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        text = " ".join(rng.sample(WORDS, rng.randint(1, 2)))
        kind = rng.randrange(5)
        if kind == 1:
            text = text[: len(text) // 2]
        elif kind == 2:
            cut = rng.randrange(len(text))
            text = text[:cut] + "x" + text[cut + 1 :]
        elif kind == 3:
            text += "s"
        elif kind == 4:
            text = 'the "' + text
        out.append(text)
    return out + out[:5] + ["nowhere", "qqq"]


@pytest.mark.parametrize("batch", [200, 7])
def test_batched_reads_equal_one_statement_per_form_and_probe(
    index: ValueIndex, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(value_index, "_BATCH", batch)  # several statements, order kept
    forms, probes = _generated(1), list(dict.fromkeys(_generated(2)))
    with index._connection() as conn:
        exact = _exact_rows(conn, forms, 5000)
        probed = _probe_rows(conn, probes, 50)
        for form in forms:
            one = conn.execute(
                "SELECT v.column_id, v.value, c.tbl, c.col FROM vals v "
                "JOIN columns c ON c.id = v.column_id WHERE v.norm = ? LIMIT ?",
                (form, 5000),
            ).fetchall()
            assert exact.get(form, []) == one
        for probe in probes:
            one = conn.execute(
                "SELECT v.column_id, v.value, c.tbl, c.col, v.norm FROM vals_fts "
                "JOIN vals v ON v.id = vals_fts.rowid JOIN columns c ON c.id = v.column_id "
                "WHERE vals_fts MATCH ? LIMIT ?",
                ('"' + probe.replace('"', '""') + '"', 50),
            ).fetchall()
            assert probed[probe] == one
    assert any(exact.values()) and any(len(rows) == 50 for rows in probed.values())


def test_a_common_value_reads_at_most_the_limit_of_rows(tmp_path: Path) -> None:
    """A value stored in many columns is read up to the limit, in the order one statement per
    form reads it, not whole."""
    path = tmp_path / "flags.sqlite"
    conn = sqlite3.connect(path)
    columns = [f"flag_{i}" for i in range(6)]
    typed = ", ".join(f"{c} TEXT" for c in columns)
    conn.execute(f"CREATE TABLE answers (id INTEGER PRIMARY KEY, {typed})")
    slots = ", ".join("?" * len(columns))
    conn.executemany(
        f"INSERT INTO answers ({', '.join(columns)}) VALUES ({slots})",
        [[answer] * len(columns) for answer in ("yes", "no", "yes")],
    )
    conn.commit()
    conn.close()
    db = resolve_database(str(path))
    with open_value_index(db, load_schema(db))._connection() as index:
        whole = index.execute(
            "SELECT v.column_id, v.value, c.tbl, c.col FROM vals v "
            "JOIN columns c ON c.id = v.column_id WHERE v.norm = ?",
            ("yes",),
        ).fetchall()
        assert len(whole) == 6
        assert _exact_rows(index, ["yes", "nowhere"], 2) == {"yes": whole[:2]}


def test_a_lookup_runs_two_statements(index: ValueIndex) -> None:
    statements: list[str] = []
    with index._connection() as conn:
        conn.set_trace_callback(statements.append)
        try:
            found = index._lookup(
                conn, ["fresno county", "kabul", "zurichh", "alamedas"], 50, 0.8, 5000
            )
        finally:
            conn.set_trace_callback(None)
    # FTS5 traces its own reads of its shadow tables too: count the index's statements
    ours = [s for s in statements if "JOIN columns c" in s]
    assert found and len(ours) == 2
