"""Servers that stop, connections that give up, results charged as they convert (issue 26).

- No session of macsql's is still running one second after the caller got its timeout, on any
  backend: what an engine cannot interrupt is refused before it starts.
- A server that accepts the TCP connection and never answers costs at most the timeout.
- A result's bytes are charged to the budget as they become Python objects: a DuckDB list of
  millions of integers, a PostgreSQL array, a MariaDB row read from the socket, a SQLite row of
  many large values.
- Least privilege on MySQL/MariaDB and DuckDB (PostgreSQL's is in test_guard_postgres_roles).
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER, concert_db
from mysql_support import admin_connection, allow_privileged, database_url
from pg_support import writable_engine
from sqlalchemy import text
from timing import generous

from macsql.database import duckdb_backend
from macsql.database.connection import (
    DatabaseRef,
    check_database,
    get_engine,
    resolve_database,
)
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.database.execution import Outcome, execute_sql, statements_in_flight
from macsql.database.least_privilege import mysql_grant_problems

TIMEOUT = 1.0


def _quiet_after(
    check: Callable[[], int], statements: list[str], run: Callable[[str], Any]
) -> None:
    """Each statement returns within the timeout (+0.5 s); one second after the last one
    returned (so at least one after each), no session of macsql's is running."""
    settle = time.monotonic() + 10  # an earlier test's abandoned work is not this test's
    while check() and time.monotonic() < settle:
        time.sleep(0.1)
    assert check() == 0, "sessions were running before the test started"
    for sql in statements:
        started = time.monotonic()
        result = run(sql)
        assert time.monotonic() - started <= generous(TIMEOUT + 0.5), (sql, result)
        assert result.outcome in (Outcome.TIMEOUT, Outcome.REJECTED, Outcome.TOO_LARGE), (
            sql,
            result,
        )
    time.sleep(1.0)
    assert check() == 0, f"a session still runs 1 s after its caller returned: {statements}"


SQLITE_RUNAWAYS = [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "SELECT length(printf('%.*c', 2000000000, 'x'))",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<400) "
    "SELECT sum(length(replace(printf('%.*c',10000000+i,'a'),'a','bb'))) FROM r",
]


def test_sqlite_statements_end_with_their_caller() -> None:
    ref = resolve_database(str(concert_db()))
    _quiet_after(
        statements_in_flight,
        SQLITE_RUNAWAYS,
        lambda sql: execute_sql(ref, sql, timeout=TIMEOUT, max_rows=None),
    )


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabaseRef]:
    pytest.importorskip("duckdb")
    from macsql.cli.main import main

    folder = tmp_path_factory.mktemp("duck-stop")
    code = main(["load", "--to", f"duckdb:///{folder}", "--spider-dir", str(SPIDER), "pets_1"])
    assert code == 0
    ref = resolve_database(f"duckdb:///{folder}/pets_1.duckdb")
    yield ref
    get_engine(ref).dispose()


def test_duckdb_statements_end_with_their_caller(duck: DatabaseRef) -> None:
    runaways = [
        "SELECT count(*) FROM range(100000000000) t(i)",
        "SELECT damerau_levenshtein(repeat('ab', 15000), repeat('ba', 15000))",
        "SELECT count(*) FROM range(100000) a, range(100000) b",
    ]
    _quiet_after(
        statements_in_flight, runaways, lambda sql: execute_sql(duck, sql, timeout=TIMEOUT)
    )


def test_duckdb_sessions_are_bounded_in_memory_and_threads(duck: DatabaseRef) -> None:
    with get_engine(duck).connect() as conn:
        raw: Any = conn.connection.driver_connection
        cursor = raw.cursor()
        cursor.execute("SELECT current_setting('memory_limit'), current_setting('threads')")
        memory, threads = cursor.fetchone()
        cursor.close()
    assert "MiB" in str(memory) and float(str(memory).split()[0]) <= 256
    assert int(threads) == duckdb_backend.THREADS


@pytest.mark.postgres
def test_postgres_sessions_end_with_their_caller(
    pg_spider: Callable[[str], DatabaseRef], pg_admin_url: str, pg_reader_url: str
) -> None:
    ref = pg_spider("concert_singer")
    execute_sql(ref, "SELECT 1")
    reader = str(pg_reader_url.split("://", 1)[1].split(":", 1)[0])
    admin = writable_engine(pg_admin_url)

    def running() -> int:
        with admin.connect() as conn:
            count = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = :user "
                    "AND state = 'active' AND pid <> pg_backend_pid()"
                ),
                {"user": reader},
            ).scalar()
        return int(count or 0)

    runaways = [
        "SELECT md5(repeat('x', 1000000000))",  # deaf to cancel and to terminate
        "SELECT count(*) FROM generate_series(1, 1000000000000) g",
        "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
        "WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 1 UNION ALL SELECT s || s, n + 1 FROM r "
        "WHERE n < 40) SELECT max(length(s)) FROM r",
        "WITH " + ", ".join(f"c{i} AS (SELECT 1 AS x)" for i in range(600)) + " SELECT 1",
    ]
    try:
        _quiet_after(running, runaways, lambda sql: execute_sql(ref, sql, timeout=TIMEOUT))
    finally:
        admin.dispose()


@pytest.mark.slow
def test_mariadb_sessions_end_with_their_caller(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str, mysql_reader_url: str
) -> None:
    ref = mysql_spider("concert_singer")
    execute_sql(ref, "SELECT 1")
    reader = str(mysql_reader_url.split("://", 1)[1].split(":", 1)[0])

    def running() -> int:
        conn = admin_connection(mysql_admin_url)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM information_schema.processlist "
                    "WHERE user = %s AND command <> 'Sleep'",
                    (reader,),
                )
                (count,) = cur.fetchone()
        finally:
            conn.close()
        return int(count)

    thousand = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    runaways = [
        # a KILLed regular expression runs on: refused before it starts
        "SELECT REGEXP_REPLACE(REPEAT('a', 60000), 'a*[bc]', 'x') IS NULL",
        "SELECT name REGEXP '(a|ab)*c' FROM singer",
        thousand + "SELECT count(*) FROM c a, c b, c d",
    ]
    _quiet_after(running, runaways, lambda sql: execute_sql(ref, sql, timeout=TIMEOUT))


# --- connections that never answer -----------------------------------------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["mysql", "postgresql+psycopg"])
def test_a_server_that_never_answers_costs_at_most_the_timeout(
    scheme: str, silent_port: int
) -> None:
    if scheme == "mysql":
        pytest.importorskip("pymysql")
    ref = resolve_database(f"{scheme}://u:p@127.0.0.1:{silent_port}/db")
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailableError, match="did not answer within 1s"):
        check_database(ref, timeout=TIMEOUT)
    assert time.monotonic() - started < generous(TIMEOUT + 0.5)
    done: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: done.setdefault("result", execute_sql(ref, "SELECT 1", timeout=TIMEOUT)),
        daemon=True,
    )
    started = time.monotonic()
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "execute_sql waited on a silent server past its timeout"
    assert time.monotonic() - started < generous(TIMEOUT + 0.6)
    assert done["result"].outcome == Outcome.TIMEOUT


def test_ask_on_a_silent_server_is_one_line_within_the_timeout(
    silent_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pymysql")
    from macsql.cli.main import main

    started = time.monotonic()
    url = f"mysql://u:p@127.0.0.1:{silent_port}/db"
    code = main(["ask", "How many?", "--db", url, "--timeout", "1"])
    assert time.monotonic() - started < 3
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "did not answer" in err, err


# --- results charged as they convert -----------------------------------------------------------

BUDGET = 16 * 1024 * 1024


def _peak_growth_mb(call: Callable[[], Any]) -> tuple[Any, float]:
    """(what `call` returned, how far this process's peak RSS rose above its RSS before)."""
    clear = Path("/proc/self/clear_refs")
    status = Path("/proc/self/status")
    if not clear.exists() or not status.exists():
        pytest.skip("needs Linux /proc to measure the peak RSS")

    def field(name: str) -> float:
        line = next(x for x in status.read_text().splitlines() if x.startswith(name))
        return int(line.split()[1]) / 1024

    try:
        clear.write_text("5")  # reset the peak (VmHWM) to the current RSS
    except OSError:
        pytest.skip("cannot reset the peak RSS here")
    before = field("VmRSS:")
    value = call()
    return value, field("VmHWM:") - before


def test_sqlite_a_row_of_many_large_values_is_never_built_whole() -> None:
    ref = resolve_database(str(concert_db()))
    execute_sql(ref, "SELECT 1")
    values = ", ".join(
        f"group_concat(printf('%.100c', '{c}'), '') AS c{i}"
        for i, c in enumerate("bcdefghijklmnopqrstuvwxyz")
    )
    sql = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 120000) "
        f"SELECT {values} FROM r"
    )
    result, grew = _peak_growth_mb(
        lambda: execute_sql(ref, sql, max_bytes=BUDGET, max_rows=None, timeout=20)
    )
    # 25 aggregates of 12 MB: a 300 MB row before its size was ever checked
    assert result.outcome in (Outcome.TOO_LARGE, Outcome.OK), result
    assert all(value is None or len(value) <= BUDGET for row in result.rows for value in row)
    assert grew < 2 * BUDGET / 2**20, f"peak RSS rose {grew:.0f} MB"
    small = execute_sql(ref, "SELECT printf('%.*c', 1000000, 'a')", max_bytes=BUDGET)
    assert small.outcome == Outcome.OK and len(small.rows[0][0]) == 1000000


def test_duckdb_nested_values_are_charged_before_they_convert(duck: DatabaseRef) -> None:
    for sql in (
        "SELECT list(i) FROM range(3000000) t(i)",  # 24 MB in DuckDB, ~100 MB as Python ints
        "SELECT list({'a': i, 'b': 'x'}) FROM range(300000) t(i)",
        "SELECT map([i], [i]) AS m FROM range(300000) t(i)",
        "SELECT list(i) FROM range(30000000) t(i)",  # past DuckDB's own memory limit
    ):
        result = execute_sql(duck, sql, max_bytes=BUDGET, max_rows=None, timeout=30)
        assert result.outcome == Outcome.TOO_LARGE, (sql, result)
    small = execute_sql(duck, "SELECT list(i) AS l, map([1], ['a']) AS m FROM range(5) t(i)")
    assert small.outcome == Outcome.OK, small.error
    assert small.rows == [([0, 1, 2, 3, 4], {1: "a"})]
    total = execute_sql(duck, "SELECT sum(i::BIGINT) AS s FROM range(5) t(i)")
    assert total.rows == [(10,)] and isinstance(total.rows[0][0], int)


@pytest.mark.postgres
def test_postgres_cells_are_charged_before_they_convert(
    pg_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = pg_spider("concert_singer")
    for sql in (
        "SELECT array_agg(g) FROM generate_series(1, 3000000) g",
        "SELECT string_agg(md5(g::text), '') FROM generate_series(1, 1000000) g",
        "SELECT jsonb_agg(g) FROM generate_series(1, 1000000) g",
    ):
        result = execute_sql(ref, sql, max_bytes=BUDGET, max_rows=None, timeout=30)
        assert result.outcome == Outcome.TOO_LARGE, (sql, result)
    fine = execute_sql(
        ref, "SELECT array_agg(g), string_agg(g::text, ',') FROM generate_series(1, 5) g"
    )
    assert fine.rows == [([1, 2, 3, 4, 5], "1,2,3,4,5")]


@pytest.mark.slow
def test_mariadb_rows_are_charged_as_they_are_read(
    mysql_spider: Callable[[str], DatabaseRef],
) -> None:
    from macsql.database import mysql_backend

    ref = mysql_spider("concert_singer")
    read = {"bytes": 0}
    real = mysql_backend.pymysql.connections.Connection._read_bytes

    def counted(self: Any, num_bytes: int) -> bytes:
        data: bytes = real(self, num_bytes)
        read["bytes"] += len(data)
        return data

    budget = 1024 * 1024
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mysql_backend.pymysql.connections.Connection, "_read_bytes", counted)
        # 8 MB of data (a constant this large would be refused before it ran)
        result = execute_sql(
            ref, "SELECT REPEAT(name, 800000) AS big FROM singer", max_bytes=budget
        )
    assert result.outcome == Outcome.TOO_LARGE, result
    assert read["bytes"] < 2 * budget, read  # the 8 MB row was never read
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]


# --- least privilege on MariaDB and DuckDB -------------------------------------------------------


def test_grant_lines_beyond_reading_are_found() -> None:
    rng = random.Random(26)
    readers = ["SELECT", "SHOW VIEW", "USAGE", "SELECT (`a`, `b`)"]
    writers = ["INSERT", "UPDATE", "DELETE", "FILE", "PROCESS", "SUPER", "ALL PRIVILEGES", "CREATE"]
    for _ in range(200):
        granted = rng.sample(readers, rng.randint(1, 3))
        line = f"GRANT {', '.join(granted)} ON `db`.* TO `u`@`%`"
        assert mysql_grant_problems([line]) == ([], [])
        bad = rng.choice(writers)
        problems, _ = mysql_grant_problems([line, f"GRANT {bad} ON *.* TO `u`@`%`"])
        assert problems == [f"{bad} on *.*"]
    problems, roles = mysql_grant_problems(
        ["GRANT USAGE ON *.* TO `u`@`%` WITH GRANT OPTION", "GRANT `writer` TO `u`@`%`"]
    )
    assert problems and "GRANT OPTION" in problems[0] and roles == ["`writer`"]


@pytest.mark.slow
def test_a_mariadb_user_that_may_write_is_refused_unless_allowed(
    mysql_spider: Callable[[str], DatabaseRef], mysql_admin_url: str
) -> None:
    mysql_spider("concert_singer")
    url = database_url(mysql_admin_url, "concert_singer")
    refused = execute_sql(resolve_database(url), "SELECT count(*) FROM singer")
    assert refused.outcome == Outcome.DATABASE_ERROR
    assert refused.error and "ALL PRIVILEGES on *.*" in refused.error
    with pytest.raises(DatabaseUnavailableError, match="macsql_allow_privileged"):
        check_database(resolve_database(url))
    allowed = resolve_database(allow_privileged(url))
    assert execute_sql(allowed, "SELECT count(*) FROM singer").rows == [(6,)]
    for ref in (resolve_database(url), allowed):
        get_engine(ref).dispose()


def test_a_duckdb_file_open_beyond_reading_is_refused(
    duck: DatabaseRef, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    config = {**duckdb_backend.READ_ONLY_CONFIG, "enable_external_access": True}
    monkeypatch.setattr(duckdb_backend, "READ_ONLY_CONFIG", config)
    copy = tmp_path / "open.duckdb"  # a file of its own: DuckDB keeps one configuration a file
    shutil.copyfile(str(duck.url).split(":///", 1)[1], copy)
    other = resolve_database(f"duckdb:///{copy}")
    try:
        result = execute_sql(other, "SELECT 1")
        assert result.outcome == Outcome.DATABASE_ERROR, result
        assert result.error and "external access" in result.error
    finally:
        get_engine(other).dispose()


def test_a_database_of_many_slow_views_costs_one_sampling_budget(tmp_path: Path) -> None:
    import sqlite3

    from macsql.database.schema import build_schema

    path = tmp_path / "slow_views.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (v INTEGER)")
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000)"
    for i in range(20):  # each view computes for about a second before its first row
        conn.execute(f"CREATE VIEW slow_{i} AS {slow} SELECT count(*) + {i} AS n FROM c")
    conn.commit()
    conn.close()
    ref = resolve_database(str(path))
    started = time.monotonic()
    schema = build_schema(ref, timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    get_engine(ref).dispose()
    assert len(schema.tables) == 21
    assert elapsed < generous(3 * TIMEOUT), f"sampling took {elapsed:.1f}s"  # not one per view
    assert any("no value examples for" in note for note in schema.notes), schema.notes
