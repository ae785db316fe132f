"""DuckDB: loading Spider, the read-only engine, the guard's refusals, the timeout and row cap,
and `ask` / `eval --gold` on loaded databases.

`tests/data/hostile_duckdb.sql` holds over 100 statements written for this project; each runs
through `execute_sql` against a DuckDB copy of Spider's concert_singer, and the file's bytes are
checksummed before and after.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    FRANCE,
    FRENCH_SINGERS,
    SPIDER,
    ask_scripted,
    french_singers,
    spider_db,
    spider_eval_args,
)
from test_hostile_corpus import HostileEntry, assert_refused, entry_id, load_corpus
from timing import generous

from macsql.cli.main import main
from macsql.database.connection import DatabaseRef, get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import GuardKind, check_statement
from macsql.database.schema import build_schema

pytest.importorskip("duckdb_engine", reason='DuckDB tests need pip install "macsql[duckdb]"')

DUCKDB_CORPUS = load_corpus(Path(__file__).parent / "data" / "hostile_duckdb.sql")
LOADED = ("concert_singer", "pets_1", "car_1")


@pytest.fixture(scope="module")
def duck_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("duck")
    code = main(["load", "--to", f"duckdb:///{folder}", "--spider-dir", str(SPIDER), *LOADED])
    assert code == 0
    return folder


@pytest.fixture(scope="module")
def concert(duck_dir: Path) -> Iterator[DatabaseRef]:
    ref = resolve_database(f"duckdb:///{duck_dir}/concert_singer.duckdb")
    yield ref
    get_engine(ref).dispose()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- loading ---------------------------------------------------------------------------------


@pytest.mark.needs_data("spider")
def test_loader_copies_every_row_and_is_idempotent(
    duck_dir: Path, concert: DatabaseRef, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sqlite3.connect(spider_db("concert_singer"))
    for table in ("singer", "concert", "stadium", "singer_in_concert"):
        (want,) = source.execute(f"SELECT count(*) FROM {table}").fetchone()
        got = execute_sql(concert, f"SELECT count(*) FROM {table}")
        assert got.rows == [(want,)], table
    capsys.readouterr()
    path = duck_dir / "concert_singer.duckdb"
    before = digest(path)
    code = main(
        [
            "load-postgres",
            "--to",
            f"duckdb:///{duck_dir}",
            "--spider-dir",
            str(SPIDER),
            "concert_singer",
        ]
    )
    assert code == 0
    assert "already loaded from this file, skipped" in capsys.readouterr().out
    assert digest(path) == before


def test_loader_refuses_roles_and_unknown_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["load", "--to", f"duckdb:///{tmp_path}", "--grant-select-to", "reader"])
    assert code == 2
    assert "DuckDB has none" in capsys.readouterr().err
    assert main(["load", "--to", "oracle://u:p@h/db", "concert_singer"]) == 2
    assert "--to takes a PostgreSQL, MySQL/MariaDB or DuckDB URL" in capsys.readouterr().err


@pytest.mark.needs_data("spider")
def test_schema_is_introspected_with_examples(concert: DatabaseRef) -> None:
    assert concert.dialect == "duckdb" and concert.name == "concert_singer"
    schema = build_schema(concert)
    singer = schema.table("singer")
    assert singer is not None and singer.column("singer_id").primary_key
    assert "France" in singer.column("country").examples
    links = {(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in schema.foreign_keys}
    assert ("singer_in_concert", "singer_id", "singer", "singer_id") in links
    assert ("concert", "stadium_id", "stadium", "stadium_id") in links


# --- the engine layer alone (the guard bypassed) ----------------------------------------------


@pytest.mark.needs_data("spider")
def test_engine_is_read_only_with_external_access_disabled(
    concert: DatabaseRef, tmp_path: Path
) -> None:
    with get_engine(concert).connect() as conn:
        raw = conn.connection.driver_connection
        for statement, words in (
            ("CREATE TABLE evil (a INT)", "read-only mode"),
            ("DELETE FROM singer", "read-only mode"),
            (f"COPY singer TO '{tmp_path}/out.csv'", "disabled by configuration"),
            ("SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
            (f"ATTACH '{tmp_path}/other.duckdb'", "disabled by configuration"),
            ("SET enable_external_access = true", "configuration has been locked"),
            ("LOAD httpfs", "disabled through configuration"),
        ):
            with pytest.raises(Exception, match=words):
                raw.execute(statement)
    assert list(tmp_path.iterdir()) == []


# --- the hostile corpus --------------------------------------------------------------------------


def test_corpus_has_over_100_distinct_classified_statements() -> None:
    assert len(DUCKDB_CORPUS) >= 100
    assert len({entry.sql for entry in DUCKDB_CORPUS}) == len(DUCKDB_CORPUS)
    kinds = {entry.kind for entry in DUCKDB_CORPUS}
    assert kinds <= {kind.value for kind in GuardKind} - {GuardKind.OK.value}
    assert {"write", "ddl", "forbidden_command", "forbidden_function", "session"} <= kinds


@pytest.mark.parametrize("entry", DUCKDB_CORPUS, ids=entry_id)
def test_guard_refuses_duckdb_entry(entry: HostileEntry) -> None:
    verdict = check_statement(entry.sql, "duckdb")
    assert not verdict.allowed
    assert verdict.reason


@pytest.mark.needs_data("spider")
def test_whole_corpus_is_refused_and_the_file_is_unchanged(concert: DatabaseRef) -> None:
    path = Path(concert.url.split("///", 1)[1])
    before = digest(path)
    siblings = sorted(p.name for p in path.parent.iterdir())
    allowed = [
        entry.sql
        for entry in DUCKDB_CORPUS
        if execute_sql(concert, entry.sql, timeout=5).error_class != "GuardRejection"
    ]
    assert allowed == []
    for entry in DUCKDB_CORPUS:
        result = execute_sql(concert, entry.sql, timeout=5)
        assert_refused(result.outcome, result.error, result.error_class)
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == siblings
    after = execute_sql(concert, "SELECT count(*) FROM singer")
    assert after.outcome == Outcome.OK and after.rows == [(6,)]


@pytest.mark.needs_data("spider")
def test_everyday_duckdb_queries_still_pass(concert: DatabaseRef) -> None:
    for sql in (
        "FROM singer SELECT name LIMIT 2",
        "SELECT name FROM singer WHERE country = 'France' ORDER BY name",
        "SELECT country, count(*) FROM singer GROUP BY ALL",
        "SELECT strftime(DATE '2020-01-02', '%Y'), regexp_matches(name, 'J') FROM singer",
    ):
        result = execute_sql(concert, sql)
        assert result.outcome in (Outcome.OK, Outcome.EMPTY_RESULT), (sql, result.error)


# --- timeout and row cap ---------------------------------------------------------------------


@pytest.mark.needs_data("spider")
def test_runaway_query_is_interrupted_within_timeout(concert: DatabaseRef) -> None:
    started = time.monotonic()
    result = execute_sql(concert, "SELECT count(*) FROM range(1000000000000) AS a", timeout=1.0)
    elapsed = time.monotonic() - started
    assert result.outcome == Outcome.TIMEOUT, result.error
    assert elapsed < generous(1.0 + 0.5)
    # the pooled connection is usable afterwards
    assert execute_sql(concert, "SELECT count(*) FROM singer").rows == [(6,)]


@pytest.mark.needs_data("spider")
def test_runaway_fetch_is_interrupted_too(concert: DatabaseRef) -> None:
    started = time.monotonic()
    query = "SELECT a FROM range(1000000000000) AS t(a) WHERE a % 2 = 0"
    result = execute_sql(concert, query, timeout=1.0, max_rows=None)
    # Whichever bound it reaches first, the deadline or the byte budget, stops it.
    assert result.outcome in (Outcome.TIMEOUT, Outcome.TOO_LARGE), result.error
    assert time.monotonic() - started < generous(1.5)


@pytest.mark.needs_data("spider")
def test_row_cap_streams_only_what_it_needs(concert: DatabaseRef) -> None:
    started = time.monotonic()
    result = execute_sql(concert, "SELECT * FROM range(1000000000000)", max_rows=25)
    assert result.outcome == Outcome.OK
    assert len(result.rows) == 25 and result.truncated
    assert time.monotonic() - started < 5  # a materialised result would never finish


# --- ask and eval --gold --------------------------------------------------------------------------


@pytest.mark.needs_data("spider")
def test_ask_on_duckdb(duck_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"duckdb:///{duck_dir}/concert_singer.duckdb"
    code, (prompt,) = ask_scripted(url, [f"```sql\n{FRENCH_SINGERS}\n```"], FRANCE)
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["rows"] == french_singers()
    assert "DuckDB" in prompt


@pytest.mark.needs_data("spider")
def test_eval_gold_on_duckdb(duck_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "duck-gold"
    url = f"duckdb:///{duck_dir}/{{db_id}}.duckdb"
    code = main(spider_eval_args(out, "--gold", "--db-url", url, "--limit", "179"))
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_scored"] + summary["n_skipped"] == 179
    # Gold that is valid DuckDB scores; SQLite-only gold (such as "France" as a string) is
    # counted as a dataset error. Measured: 146 scored, 33 gold_error.
    assert summary["n_scored"] >= 140
    assert summary["ex"] == 100.0
    assert summary["skip_reasons"] == {"gold_error": summary["n_skipped"]}
