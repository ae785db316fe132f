"""What a new user meets first: the Python API (`macsql.ask`, `aask`, `connect`), CSV, Parquet
and DataFrames as databases, DuckDB files recognised by their header, and loaders that say
where they wrote and fail in one line."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import concert_db

import macsql
from macsql.cli.main import main
from macsql.core.results import Result
from macsql.database.connection import DatabaseNotFoundError, resolve_database
from macsql.database.file_kinds import file_kind
from macsql.testing.scripted import ScriptedChatModel, ScriptedOpenAIServer

CONCERT = concert_db()
PEOPLE = pd.DataFrame({"name": ["Ann", "Bob", "Cy"], "age": [31, 40, 52]})


def _sql(sql: str) -> str:
    return f"```sql\n{sql}\n```"


@pytest.fixture
def server() -> ScriptedOpenAIServer:
    replies = {
        "count": "SELECT count(*) FROM singer",
        "people": "SELECT name FROM people WHERE age > 35 ORDER BY name",
    }

    def respond(prompt: str) -> str:
        return _sql(replies["people" if "people" in prompt else "count"])

    with ScriptedOpenAIServer(respond) as running:
        yield running


def _model(server: ScriptedOpenAIServer) -> dict[str, str]:
    return {"model": "openai:scripted", "base_url": server.base_url, "api_key": "k"}


# --------------------------------------------------------------------------- the Python API


def test_import_macsql_loads_nothing_heavy() -> None:
    heavy = ("langgraph", "sqlalchemy", "pydantic", "pandas", "langchain_core")
    code = f"import sys, macsql; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ask_returns_a_typed_result_with_a_dataframe(server: ScriptedOpenAIServer) -> None:
    result = macsql.ask("How many singers?", str(CONCERT), **_model(server))
    assert isinstance(result, Result) and result.ok
    assert result.sql == "SELECT count(*) FROM singer"
    # The column is named after the statement that ran, as the guard wrote it.
    assert result.rows == [[6]] and result.columns == ["COUNT(*)"]
    assert result.usage["decomposer"]["calls"] == 1 and result.fallbacks == []
    frame = result.to_pandas()
    assert list(frame.columns) == ["COUNT(*)"] and frame.iloc[0, 0] == 6


def test_the_async_twin(server: ScriptedOpenAIServer) -> None:
    result = asyncio.run(macsql.aask("How many singers?", str(CONCERT), **_model(server)))
    assert result.rows == [[6]] and result.status == "ok"


def test_a_model_object_works_too() -> None:
    model = ScriptedChatModel(responder=[_sql("SELECT count(*) FROM singer")])
    assert macsql.ask("How many singers?", str(CONCERT), model=model).rows == [[6]]


def test_settings_are_checked_by_name_and_range() -> None:
    with pytest.raises(macsql.SettingsError, match="did you mean 'max_try_times'"):
        macsql.connect("demo", max_try_time=3)
    with pytest.raises(macsql.SettingsError, match="max_try_times"):
        macsql.connect("demo", max_try_times=0)


def test_approve_edits_the_sql_before_it_runs(server: ScriptedOpenAIServer) -> None:
    seen: list[str] = []

    def approve(waiting: macsql.PendingApproval) -> bool | str:
        seen.append(waiting.sql)
        return "SELECT count(*) FROM singer WHERE Age > 40"

    result = macsql.ask("How many singers?", str(CONCERT), approve=approve, **_model(server))
    assert seen == ["SELECT count(*) FROM singer"]
    assert result.sql == "SELECT count(*) FROM singer WHERE Age > 40" and result.ok


@pytest.mark.parametrize("kind", ["dataframe", "mapping", "csv", "parquet"])
def test_tables_are_loaded_into_duckdb_and_asked(
    kind: str, server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    csv = tmp_path / "people.csv"
    PEOPLE.to_csv(csv, index=False)
    parquet = tmp_path / "people.parquet"
    PEOPLE.to_parquet(parquet)
    db = {"dataframe": PEOPLE, "mapping": {"People": PEOPLE}, "csv": csv, "parquet": parquet}
    source = db[kind]
    if kind == "dataframe":
        source = {"people": PEOPLE}  # a lone DataFrame is table `data`; the model says people
    with macsql.connect(source, **_model(server)) as connection:
        assert connection.db.startswith("duckdb:///")
        held = Path(connection.db.removeprefix("duckdb:///"))
        assert held.is_file()
        result = connection.ask("Who is older than 35?")
        assert result.rows == [["Bob"], ["Cy"]]
        # Two questions, one load.
        assert connection.ask("And older than 35 again?").rows == [["Bob"], ["Cy"]]
    assert not held.exists(), "the in-memory copy is dropped on close"


def test_a_lone_dataframe_is_table_data() -> None:
    model = ScriptedChatModel(responder=[_sql("SELECT count(*) FROM data")])
    assert macsql.ask("How many rows?", PEOPLE, model=model).rows == [[3]]


def test_loaded_tables_keep_the_guard_and_the_bounds(tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("x\n1\n")
    attempts = [
        "DROP TABLE people",
        f"SELECT * FROM read_csv_auto('{secret}')",
        "COPY people TO '/tmp/out.csv'",
    ]
    for sql in attempts:
        model = ScriptedChatModel(responder=lambda _prompt, sql=sql: _sql(sql))
        result = macsql.ask("Do it", {"people": PEOPLE}, model=model, max_try_times=1)
        assert result.status == "failed" and result.outcome == "rejected", sql
    model = ScriptedChatModel(responder=[_sql("SELECT name FROM people")])
    capped = macsql.ask("Names?", {"people": PEOPLE}, model=model, max_rows=2)
    assert capped.rows == [["Ann"], ["Bob"]] and capped.truncated


def test_path_keeps_the_loaded_file(tmp_path: Path) -> None:
    target = tmp_path / "kept.duckdb"
    with macsql.connect({"people": PEOPLE}, path=target) as connection:
        assert connection.db == f"duckdb:///{target}"
    assert target.is_file() and file_kind(target) == "duckdb"


# --------------------------------------------------------------------------- files by header


def _duckdb_file(path: Path) -> Path:
    import duckdb

    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE singer AS SELECT 'Ann' AS name, 31 AS age")
    return path


@pytest.mark.parametrize("name", ["x.duckdb", "x.db", "x.sqlite", "noextension"])
def test_a_duckdb_file_is_recognised_whatever_its_name(name: str, tmp_path: Path) -> None:
    ref = resolve_database(str(_duckdb_file(tmp_path / name)))
    assert ref.backend == "duckdb" and ref.sqlite_path is None


def test_generated_files_are_told_apart_by_their_first_bytes(tmp_path: Path) -> None:
    rng = random.Random(6)
    for index in range(40):
        kind = rng.choice(["sqlite", "duckdb", "parquet"])
        name = f"f{index}" + rng.choice([".db", ".data", "", ".sqlite", ".duckdb", ".parquet"])
        path = tmp_path / name
        if kind == "sqlite":
            with sqlite3.connect(path) as conn:
                conn.execute(f"CREATE TABLE t{index} (x)")
            conn.close()
        elif kind == "duckdb":
            _duckdb_file(path)
        else:
            PEOPLE.sample(frac=1, random_state=index).to_parquet(path)
        assert file_kind(path) == kind, name
        path.unlink()


def test_ask_db_takes_a_duckdb_csv_or_parquet_file(
    server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    csv = tmp_path / "people.csv"
    PEOPLE.to_csv(csv, index=False)
    model = ["--model", "openai:m", "--base-url", server.base_url, "--api-key", "k", "--json"]
    for db in (csv, tmp_path / "people.parquet"):
        if db.suffix == ".parquet":
            PEOPLE.to_parquet(db)
        assert main(["ask", "Who is older than 35?", "--db", str(db), *model]) == 0
        assert json.loads(capsys.readouterr().out)["rows"] == [["Bob"], ["Cy"]]
    duck = _duckdb_file(tmp_path / "singers.duckdb")
    assert main(["ask", "How many singers?", "--db", str(duck), *model]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == [[1]]


def test_a_table_file_given_to_the_graph_names_the_way_in(tmp_path: Path) -> None:
    csv = tmp_path / "data.csv"
    csv.write_text("id,name\n1,pen\n")
    with pytest.raises(DatabaseNotFoundError, match=r"CSV file.*macsql.connect"):
        resolve_database(str(csv))


# --------------------------------------------------------------------------- loaders


def _load(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "macsql.cli.main", "load", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def test_load_help_names_every_backend() -> None:
    done = _load("--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for backend in ("PostgreSQL", "MySQL", "DuckDB", "duckdb:///FILE.duckdb"):
        assert backend in text, backend


def test_a_duckdb_file_target_is_that_file_and_the_loader_says_so(tmp_path: Path) -> None:
    target = tmp_path / "out" / "cs.duckdb"
    done = _load("--sqlite", str(CONCERT), "--to", f"duckdb:///{target}")
    assert done.returncode == 0, done.stderr
    assert target.is_file() and file_kind(target) == "duckdb"
    assert f"-> {target}" in done.stdout
    assert resolve_database(str(target)).backend == "duckdb"


def test_a_file_target_takes_one_database_only(tmp_path: Path) -> None:
    target = tmp_path / "cs.duckdb"
    done = _load("--sqlite", str(CONCERT), "--sqlite", str(CONCERT), "--to", f"duckdb:///{target}")
    assert done.returncode == 2
    assert "names one file, but 2 databases" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_folder_target_writes_one_file_per_database(tmp_path: Path) -> None:
    done = _load("--sqlite", str(CONCERT), "--to", f"duckdb:///{tmp_path / 'dbs'}")
    assert done.returncode == 0, done.stderr
    written = tmp_path / "dbs" / f"{CONCERT.stem}.duckdb"
    assert written.is_file() and f"-> {written}" in done.stdout


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:secret@127.0.0.1:1/postgres",
        "mysql://u:secret@127.0.0.1:1/",
        "mariadb://u:secret@127.0.0.1:1/",
    ],
)
def test_a_server_that_is_down_is_one_line(url: str) -> None:
    done = _load("--sqlite", str(CONCERT), "--to", url)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "refused" in lines[0].lower()
    assert "secret" not in done.stderr
