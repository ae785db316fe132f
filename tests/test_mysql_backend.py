"""MySQL/MariaDB on a real server: the guard's refusals, the read-only session, the timeout and
row cap, loading, and `ask` / `eval --gold` on loaded Spider databases.

`tests/data/hostile_mysql.sql` holds over 100 statements written for this project; each runs
through `execute_sql` against Spider's concert_singer loaded into the server, and a checksum of
the server (every table's rows, schemas, users, privileges, routines, settings) is compared
before and after the whole corpus.
"""

from __future__ import annotations

import glob
import json
import sqlite3
import time
from collections.abc import Callable
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
from mysql_support import admin_connection, allow_privileged, database_url, mysql_checksum
from test_hostile_corpus import HostileEntry, assert_refused, entry_id, load_corpus
from timing import generous

from macsql.cli.main import main
from macsql.database.connection import DatabaseRef, get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import GuardKind, check_statement
from macsql.database.schema import build_schema

pytest.importorskip("pymysql", reason='MySQL tests need pip install "macsql[mysql]"')

MYSQL_CORPUS = load_corpus(Path(__file__).parent / "data" / "hostile_mysql.sql")
# A runaway query: a triple cross join of 1,000 generated rows (a billion rows; the server caps
# recursion at 1,000 levels, and the information views a query may read now list the
# database's own columns only).
_THOUSAND = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
RUNAWAY = _THOUSAND + "SELECT count(*) FROM c a, c b, c d"
HUGE = _THOUSAND + "SELECT a.x FROM c a, c b"


# --- the guard ---------------------------------------------------------------------------------


def test_corpus_has_over_100_distinct_classified_statements() -> None:
    assert len(MYSQL_CORPUS) >= 100
    assert len({entry.sql for entry in MYSQL_CORPUS}) == len(MYSQL_CORPUS)
    kinds = {entry.kind for entry in MYSQL_CORPUS}
    assert kinds <= {kind.value for kind in GuardKind} - {GuardKind.OK.value}
    assert {"write", "ddl", "locking", "forbidden_function", "forbidden_command"} <= kinds


@pytest.mark.parametrize("entry", MYSQL_CORPUS, ids=entry_id)
def test_guard_refuses_mysql_entry(entry: HostileEntry) -> None:
    verdict = check_statement(entry.sql, "mysql")
    assert not verdict.allowed
    assert verdict.reason


def test_guard_keeps_everyday_mysql_queries() -> None:
    for sql in (
        "SELECT name FROM singer WHERE country = 'France' ORDER BY name",
        "SELECT `name`, 'OUTFILE' AS word FROM singer LIMIT 3",
        "SELECT country, count(*) FROM singer GROUP BY country HAVING count(*) > 1",
        "SELECT concat(name, '!') FROM singer WHERE name LIKE 'J%'",
    ):
        assert check_statement(sql, "mysql").allowed, sql


# --- the server ----------------------------------------------------------------------------------


def test_whole_corpus_is_refused_and_the_server_is_unchanged(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str
) -> None:
    ref = mysql_spider("concert_singer")
    before = mysql_checksum(mysql_admin_url)
    files_before = set(glob.glob("/tmp/macsql_*"))
    for entry in MYSQL_CORPUS:
        result = execute_sql(ref, entry.sql, timeout=5)
        assert_refused(result.outcome, result.error, result.error_class)
    assert mysql_checksum(mysql_admin_url) == before
    assert set(glob.glob("/tmp/macsql_*")) <= files_before
    after = execute_sql(ref, "SELECT count(*) FROM singer")
    assert after.outcome == Outcome.OK and after.rows == [(6,)]


def test_session_is_read_only_without_the_guard(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str
) -> None:
    mysql_spider("concert_singer")
    # A user that may write, accepted on purpose: the session's READ ONLY alone must stop it.
    ref = resolve_database(allow_privileged(database_url(mysql_admin_url, "concert_singer")))
    with get_engine(ref).connect() as conn:
        raw = conn.connection.driver_connection
        with raw.cursor() as cur:
            mariadb = "mariadb" in raw.get_server_info().lower()
            variable = "tx_read_only" if mariadb else "transaction_read_only"
            cur.execute(f"SELECT @@SESSION.{variable}")
            assert cur.fetchone() == (1,)
            with pytest.raises(Exception, match="READ ONLY transaction"):
                cur.execute("DELETE FROM singer")
        raw.rollback()
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]


def test_runaway_query_is_stopped_within_timeout(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str
) -> None:
    ref = mysql_spider("concert_singer")
    execute_sql(ref, "SELECT 1")  # a pooled connection, so the clock measures the query only
    started = time.monotonic()
    result = execute_sql(ref, RUNAWAY, timeout=1.0)
    elapsed = time.monotonic() - started
    assert result.outcome == Outcome.TIMEOUT, result.error
    assert elapsed < generous(1.0 + 0.5)
    time.sleep(0.2)
    conn = admin_connection(mysql_admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.processlist "
                "WHERE info LIKE 'WITH RECURSIVE c(x)%' AND command <> 'Sleep'"
            )
            assert cur.fetchone() == (0,)  # the server is not still running it
    finally:
        conn.close()
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]


def test_runaway_fetch_is_stopped_within_timeout(
    mysql_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = mysql_spider("concert_singer")
    execute_sql(ref, "SELECT 1")
    started = time.monotonic()
    result = execute_sql(ref, HUGE + ", c d", timeout=1.0, max_rows=None)
    assert result.outcome == Outcome.TIMEOUT, result.error
    assert time.monotonic() - started < generous(1.5)
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]


def test_row_cap_streams_only_what_it_needs(mysql_spider: Callable[[str], DatabaseRef]) -> None:
    ref = mysql_spider("concert_singer")
    started = time.monotonic()
    result = execute_sql(ref, HUGE, max_rows=25, timeout=30)
    assert result.outcome == Outcome.OK, result.error
    assert len(result.rows) == 25 and result.truncated
    assert time.monotonic() - started < 5
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]


# --- loading, schema, ask, eval -------------------------------------------------------------


def test_loader_copies_rows_skips_reloads_and_grants_select(
    mysql_spider: Callable[[str], DatabaseRef],
    mysql_admin_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ref = mysql_spider("car_1")
    source = sqlite3.connect(spider_db("car_1"))
    for table in ("cars_data", "car_names", "model_list"):
        (want,) = source.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert execute_sql(ref, f"SELECT count(*) FROM {table}").rows == [(want,)]
    conn = admin_connection(mysql_admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS 'backends_reader'@'%' IDENTIFIED BY 'r'")
        code = main(
            [
                "load",
                "--to",
                mysql_admin_url,
                "--spider-dir",
                str(SPIDER),
                "car_1",
                "--grant-select-to",
                "backends_reader",
            ]
        )
        assert code == 0
        assert "already loaded from this file, skipped" in capsys.readouterr().out
        code = main(
            [
                "load",
                "--to",
                mysql_admin_url,
                "--spider-dir",
                str(SPIDER),
                "pets_1",
                "--replace",
                "--grant-select-to",
                "backends_reader",
            ]
        )
        assert code == 0
        with conn.cursor() as cur:
            cur.execute("SHOW GRANTS FOR 'backends_reader'@'%'")
            grants = " ".join(row[0] for row in cur.fetchall())
        assert "GRANT SELECT ON `pets_1`.*" in grants
    finally:
        with conn.cursor() as cur:
            cur.execute("DROP USER IF EXISTS 'backends_reader'@'%'")
        conn.close()


def test_schema_is_introspected_with_examples(mysql_spider: Callable[[str], DatabaseRef]) -> None:
    ref = mysql_spider("concert_singer")
    assert ref.dialect == "mysql" and ref.name == "concert_singer"
    schema = build_schema(ref)
    singer = schema.table("singer")
    assert singer is not None and singer.column("singer_id").primary_key
    assert "France" in singer.column("country").examples
    links = {(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in schema.foreign_keys}
    assert ("singer_in_concert", "singer_id", "singer", "singer_id") in links
    assert ("concert", "stadium_id", "stadium", "stadium_id") in links


def test_ask_on_mysql(
    mysql_spider: Callable[[str], DatabaseRef], capsys: pytest.CaptureFixture[str]
) -> None:
    ref = mysql_spider("concert_singer")
    code, (prompt,) = ask_scripted(ref.url, [f"```sql\n{FRENCH_SINGERS}\n```"], FRANCE)
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["rows"] == french_singers()
    assert "MySQL" in prompt and "backticks" in prompt


def test_eval_gold_on_mysql(
    mysql_spider: Callable[[str], DatabaseRef], mysql_reader_url: str, tmp_path: Path
) -> None:
    mysql_spider("concert_singer")
    out = tmp_path / "mysql-gold"
    url = database_url(mysql_reader_url, "{db_id}")
    code = main(spider_eval_args(out, "--gold", "--db-url", url, "--limit", "179"))
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_scored"] + summary["n_skipped"] == 179
    assert summary["n_scored"] >= 150
    assert summary["ex"] == 100.0
    assert set(summary["skip_reasons"]) <= {"gold_error"}


def test_mariadb_urls_use_the_same_guarded_path(
    mysql_spider: Callable[[str], DatabaseRef], mysql_reader_url: str
) -> None:
    mysql_spider("concert_singer")
    url = database_url(mysql_reader_url, "concert_singer").replace("mysql://", "mariadb://", 1)
    ref = resolve_database(url)
    assert ref.url.startswith("mariadb+pymysql://") and ref.dialect == "mysql"
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]
    refused = execute_sql(ref, "SELECT * FROM singer INTO OUTFILE '/tmp/macsql_mariadb_out'")
    assert refused.outcome == Outcome.REJECTED and "OUTFILE" in (refused.error or "")
    get_engine(ref).dispose()
