"""The value index: approximate matches, bounded builds, persistence keyed like the schema cache."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from macsql.database.connection import resolve_database
from macsql.database.schema import clear_schema_cache, load_schema
from macsql.database.value_index import (
    _probes,
    clear_value_indexes,
    index_path,
    open_value_index,
)


def _db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schools (id INTEGER PRIMARY KEY, district TEXT, city TEXT, url TEXT,
                              school_id TEXT, notes TEXT, enrolment INTEGER);
        CREATE TABLE players (id INTEGER PRIMARY KEY, name TEXT);
        """
    )
    long_note = "a long free text note that is not a value anyone would ask for " * 3
    conn.executemany(
        "INSERT INTO schools (district, city, url, school_id, notes, enrolment) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                "Fresno County Office of Education",
                "São Paulo",
                "https://a.example",
                "S1",
                long_note,
                10,
            ),
            ("Los Angeles Unified", "Zürich", "https://b.example", "S2", long_note, 20),
            (
                "Alameda County Office of Education",
                "Kabul",
                "https://c.example",
                "S3",
                long_note,
                30,
            ),
        ],
    )
    conn.executemany("INSERT INTO players (name) VALUES (?)", [(f"Player {i}",) for i in range(50)])
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def index(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = resolve_database(str(_db(tmp_path / "schools.sqlite")))
    return open_value_index(db, load_schema(db))


def _found(index, phrase: str) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {(m.column, m.value) for m in index.lookup([phrase])}


def test_case_and_accents_are_ignored(index) -> None:  # type: ignore[no-untyped-def]
    assert ("city", "São Paulo") in _found(index, "SAO PAULO")
    assert ("city", "Zürich") in _found(index, "zurich")
    exact = index.lookup(["sao paulo"])[0]
    assert exact.value == "São Paulo" and exact.score == 1.0


def test_partial_names_find_the_stored_value(index) -> None:  # type: ignore[no-untyped-def]
    found = _found(index, "Fresno")
    assert ("district", "Fresno County Office of Education") in found
    assert ("district", "Alameda County Office of Education") not in found


def test_one_typo_still_matches(index) -> None:  # type: ignore[no-untyped-def]
    assert ("city", "Kabul") in _found(index, "Kabull")
    assert ("district", "Fresno County Office of Education") in _found(index, "Fresmo County")
    assert ("city", "Kabul") not in _found(index, "Paris")


def test_probes_of_a_phrase_are_cut_between_words() -> None:
    # A half cut inside a word ("o kalom") has common trigrams and few matches: the trigram
    # index reads long posting lists to the end for it, which made the slowest lookups.
    probes = _probes("shipped to kalomi")
    assert probes == ["shipped to kalomi", "shipped", "kalomi"]
    assert _probes("kabull") == ["kabull", "kab", "ull"]  # one word: a typo in either half
    assert _probes("of la") == ["of la"]


def test_a_typo_in_a_phrase_of_several_words_still_matches(index) -> None:  # type: ignore[no-untyped-def]
    found = _found(index, "Fresno County Office of Educaton")
    assert ("district", "Fresno County Office of Education") in found
    assert ("district", "Alameda County Office of Education") not in found


def test_keys_ids_urls_long_texts_and_numbers_are_not_indexed(index) -> None:  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(index.path)
    columns = {c for (c,) in conn.execute("SELECT col FROM columns")}
    conn.close()
    assert columns == {"district", "city", "name"}


def test_the_build_is_capped_per_column_and_per_database(tmp_path: Path) -> None:
    db = resolve_database(str(_db(tmp_path / "capped.sqlite")))
    schema = load_schema(db)
    per_column = open_value_index(db, schema, values_per_column=2, refresh=True)
    assert per_column.stats.values == 2 + 2 + 2  # district, city, name: two each
    whole = open_value_index(db, schema, max_values=4, refresh=True)
    assert whole.stats.values == 4
    rows = open_value_index(db, schema, rows_per_table=1, refresh=True)
    assert rows.stats.values == 3  # one row read from each table


def test_reused_when_unchanged_rebuilt_when_the_file_changes(tmp_path: Path) -> None:
    path = _db(tmp_path / "changing.sqlite")
    db = resolve_database(str(path))
    first = open_value_index(db, load_schema(db))
    assert first.stats.rebuilt
    # A fresh process: nothing in memory, the file on disk is read, not rebuilt.
    clear_value_indexes()
    clear_schema_cache()
    again = open_value_index(db, load_schema(db))
    assert not again.stats.rebuilt and again.path == first.path
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO players (name) VALUES ('Brand New Striker')")
    conn.commit()
    conn.close()
    os.utime(path, (1, 1))  # a new modification stamp even within the same second
    changed = resolve_database(str(path))
    assert index_path(changed) != first.path
    rebuilt = open_value_index(changed, load_schema(changed))
    assert rebuilt.stats.rebuilt
    assert ("name", "Brand New Striker") in _found(rebuilt, "brand new striker")


def test_a_corrupt_index_file_is_rebuilt(tmp_path: Path) -> None:
    db = resolve_database(str(_db(tmp_path / "corrupt.sqlite")))
    path = index_path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not an sqlite file")
    clear_value_indexes()
    index = open_value_index(db, load_schema(db))
    assert index.stats.rebuilt and ("city", "Kabul") in _found(index, "kabul")


def test_macsql_index_builds_then_reads_then_refreshes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from macsql.cli.main import main

    db = str(_db(tmp_path / "cli.sqlite"))
    clear_value_indexes()
    assert main(["index", "--db", db]) == 0
    assert "value index built" in capsys.readouterr().out
    clear_value_indexes()
    assert main(["index", "--db", db]) == 0
    assert "read (unchanged)" in capsys.readouterr().out
    assert main(["index", "--db", db, "--refresh"]) == 0
    assert "value index built" in capsys.readouterr().out
    assert main(["index", "--db", str(tmp_path / "missing.sqlite")]) == 2


def test_a_short_value_inside_a_long_phrase_is_no_match() -> None:
    from macsql.database.value_index import match_score

    assert match_score("math course described", "c") < 0.5
    assert match_score("fresmo county", "fresno county office of education") >= 0.8
