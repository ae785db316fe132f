"""`macsql ask` reaches its first model request without importing what only SQL needs.

Importing SQLAlchemy, sqlglot and numpy took about a quarter of the time before the first
request (benchmarks/bench_first_contact.py). With a cached schema none of them is needed
until the model's SQL comes back, so each is imported then. These tests run the real CLI in a
fresh interpreter against the scripted OpenAI-compatible server, record `sys.modules` when the
first HTTP request leaves, and check that the command still completes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from macsql.testing.scripted import ScriptedOpenAIServer

DEFERRED = ("sqlalchemy", "sqlglot", "numpy")

# Runs `macsql ask` in this interpreter; the first request through httpx records which of the
# deferred libraries were loaded by then.
_PROBE = r"""
import json, runpy, sys
import httpx
report, deferred = sys.argv[1], sys.argv[2].split(",")
original = httpx.Client.send
def send(self, *args, **kwargs):
    if not getattr(send, "done", False):
        send.done = True
        with open(report, "w") as f:
            json.dump(sorted(m for m in deferred if m in sys.modules), f)
    return original(self, *args, **kwargs)
httpx.Client.send = send
sys.argv = ["macsql", *sys.argv[3:]]
runpy.run_module("macsql.cli.main", run_name="__main__")
"""


def _ask(db: str, tmp_path: Path, server: ScriptedOpenAIServer) -> tuple[list[str], str]:
    report = tmp_path / "loaded.json"
    report.unlink(missing_ok=True)
    args = ["ask", "How many rows are there?", "--db", db, "--model", "openai:m"]
    args += ["--base-url", server.base_url, "--api-key", "k"]
    env = {**os.environ, "MACSQL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), ",".join(DEFERRED), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(report.read_text()), done.stdout


def test_demo_database_asks_before_loading_sql_libraries(tmp_path: Path) -> None:
    reply = "```sql\nSELECT count(*) FROM book\n```"
    with ScriptedOpenAIServer(lambda _prompt: reply) as server:
        _ask("demo", tmp_path, server)  # the first run builds the schema cache
        loaded, out = _ask("demo", tmp_path, server)
    assert loaded == []
    assert "SELECT count(*) FROM book" in out
    assert "status: ok" in out  # the deferred imports happened when the SQL ran


def test_a_users_sqlite_file_is_checked_without_sqlalchemy(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO item (name) VALUES (?)", [("pen",), ("ink",)])
    reply = "```sql\nSELECT count(*) FROM item\n```"
    with ScriptedOpenAIServer(lambda _prompt: reply) as server:
        first_loaded, _ = _ask(str(path), tmp_path, server)
        loaded, out = _ask(str(path), tmp_path, server)
    assert "sqlalchemy" in first_loaded  # a cold cache introspects the file through SQLAlchemy
    assert loaded == []
    assert "status: ok" in out and "2" in out


# The Python API's first request: `macsql.ask` on the demo database, in a fresh interpreter.
_API_PROBE = r"""
import json, sys
import httpx
report, deferred, base_url = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
original = httpx.Client.send
def send(self, *args, **kwargs):
    if not getattr(send, "done", False):
        send.done = True
        with open(report, "w") as f:
            json.dump(sorted(m for m in deferred if m in sys.modules), f)
    return original(self, *args, **kwargs)
httpx.Client.send = send
import macsql
result = macsql.ask("How many books?", "demo", model="openai:m", base_url=base_url, api_key="k")
print(result.status, result.rows)
"""


def test_the_python_api_asks_before_loading_sql_libraries(tmp_path: Path) -> None:
    reply = "```sql\nSELECT count(*) FROM book\n```"
    report = tmp_path / "loaded.json"
    env = {**os.environ, "MACSQL_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedOpenAIServer(lambda _prompt: reply) as server:
        probe = [sys.executable, "-c", _API_PROBE, str(report), ",".join(DEFERRED)]
        for _warm_then_measure in range(2):  # the first run builds the schema cache
            done = subprocess.run(
                [*probe, server.base_url],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
    assert json.loads(report.read_text()) == []
    assert done.stdout.startswith("ok [[")


def test_the_sqlite_check_still_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    from macsql.database.connection import check_database, resolve_database
    from macsql.database.connection_errors import DatabaseUnavailableError

    path = tmp_path / "data.bin"  # a CSV is recognised and loaded instead: test_front_door.py
    path.write_text("id,name\n1,pen\n")
    with pytest.raises(DatabaseUnavailableError, match="file is not a database"):
        check_database(resolve_database(str(path)))


@pytest.mark.parametrize("name", ["a b.sqlite", "q?x#1.sqlite", "100%.sqlite", "ü@:.sqlite"])
def test_sqlite_paths_with_url_characters_open_that_file(tmp_path: Path, name: str) -> None:
    """`?`, `#` and `%` in a file name: the check, the schema and the executor all open the
    named file (SQLAlchemy's URL form cut the path at `?`), still read-only."""
    from macsql.database.connection import check_database, resolve_database
    from macsql.database.execution import Outcome, execute_sql
    from macsql.database.schema import load_schema

    path = tmp_path / name
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (7)")
    before = path.read_bytes()
    ref = resolve_database(str(path))
    check_database(ref)  # raises DatabaseUnavailableError if not
    assert [table.name for table in load_schema(ref).tables] == ["t"]
    assert execute_sql(ref, "SELECT x FROM t").rows == [(7,)]
    assert execute_sql(ref, "DELETE FROM t").outcome == Outcome.REJECTED
    assert path.read_bytes() == before
