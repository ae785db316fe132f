"""Private data kept private (issue 26): with `send_rows_to_model` off no cell reaches a prompt,
not even inside a database's error message, and a recorded repair stays with its user, database
and thread unless shared on purpose."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db
from langgraph.store.memory import InMemoryStore
from pg_support import reader_name, writable_engine
from sqlalchemy import text

from macsql.database.connection import get_engine, resolve_database
from macsql.database.loaders.postgres import copy_sqlite_to_postgres, database_url
from macsql.graph.macsql_graph import graph
from macsql.memory.repairs import (
    SHARED_NAMESPACE,
    record_repair,
    recorded_namespace,
    retrieve_similar_repairs,
    seed_repair_memory,
)
from macsql.prompts.error_privacy import HIDDEN, scrub_values

SECRET = "Zq7 Secret-Cell 4411"
CAST_SQL = "SELECT CAST(name AS INTEGER) FROM singer"

# What databases say, with the value they quote at {v} (PostgreSQL, DuckDB, MySQL, SQLite).
TEMPLATES = [
    'invalid input syntax for type integer: "{v}"',
    "Conversion Error: Could not convert string '{v}' to INT32",
    "(1292, \"Truncated incorrect DOUBLE value: '{v}'\")",
    "Conversion Error: Type INT32 with value {n} can't be cast to the destination type INT8",
    'value "{v}" is out of range for type integer',
    "invalid input value for enum mood: «{v}»",
]
_ALPHABET = "abcXYZ019 -_.,:;!?/\\'éß日本\u00a0\u2003"


def _secret(rng: random.Random) -> str:
    core = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(3, 20))).replace("'", "")
    return f"s{core.replace(chr(34), '')}q"  # a letter at each end: never blank, never a quote


def test_generated_values_never_survive_and_what_the_sql_says_does() -> None:
    rng = random.Random(26)
    for _ in range(400):
        template = rng.choice(TEMPLATES)
        value, number = _secret(rng), str(rng.randint(1000, 10**9))
        message = template.format(v=value, n=number)
        sql = f"SELECT CAST(col_{rng.randint(0, 9)} AS INTEGER) FROM t WHERE a = 'known'"
        scrubbed = scrub_values(message, sql, "DataError")
        assert scrubbed is not None
        assert value not in scrubbed and number not in scrubbed, (message, scrubbed)
        assert HIDDEN in scrubbed
        if "{v}" in template:  # what the model wrote may be echoed: it knows it already
            echoed = scrub_values(template.format(v="known", n="1"), sql, "DataError")
            assert echoed is not None and "known" in echoed, echoed


def test_names_the_model_wrote_stay_and_macsql_own_messages_are_whole() -> None:
    sql = 'SELECT "nme" FROM singer'
    assert scrub_values('column "nme" does not exist', sql, "UndefinedColumn") == (
        'column "nme" does not exist'
    )
    own = "Rejected: the SQL is 30,000 characters long; the limit is 20,000."
    assert scrub_values(own, sql, "GuardRejection") == own


def _duckdb_with_secret(tmp_path: Path) -> str:
    from macsql.cli.main import main

    source = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(concert_db(), source)
    conn = sqlite3.connect(source)
    conn.execute("UPDATE singer SET name = ? WHERE singer_id = 1", (SECRET,))
    conn.commit()
    conn.close()
    folder = tmp_path / "duck"
    code = main(["load", "--to", f"duckdb:///{folder}", "--sqlite", str(source)])
    assert code == 0
    return f"duckdb:///{folder}/concert_singer.duckdb"


def _refine_once(scripted: Any, db: str) -> list[str]:
    model, context = scripted(
        [f"```sql\n{CAST_SQL}\n```", "```sql\nSELECT count(*) FROM singer\n```"],
        send_rows_to_model=False,
        num_value_examples=0,
        link_max_values=0,
        max_try_times=3,
    )
    out = graph.invoke({"question": "How many singers?", "db": db}, context=context)
    assert out["attempts"] == 2, out
    return list(model.prompts)


def test_a_cell_in_a_duckdb_error_never_reaches_the_refiner(scripted: Any, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    db = _duckdb_with_secret(tmp_path)
    try:
        prompts = _refine_once(scripted, db)
    finally:
        get_engine(resolve_database(db)).dispose()
    refiner = prompts[1]
    assert "[Execution outcome] execution_error" in refiner
    assert SECRET not in refiner and "Secret-Cell" not in refiner
    assert HIDDEN in refiner  # the message itself is there, its value is not


@pytest.mark.postgres
def test_a_cell_in_a_postgres_error_never_reaches_the_refiner(
    scripted: Any, tmp_path: Path, pg_admin_url: str, pg_reader_url: str
) -> None:
    source = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(concert_db(), source)
    conn = sqlite3.connect(source)
    conn.execute("UPDATE singer SET name = ? WHERE singer_id = 1", (SECRET,))
    conn.commit()
    conn.close()
    name = "macsql_test_error_privacy"
    grant = reader_name(pg_reader_url)
    copy_sqlite_to_postgres(source, pg_admin_url, name, replace=True, grant_select_to=grant)
    url = database_url(pg_reader_url, name)
    try:
        prompts = _refine_once(scripted, url)
    finally:
        get_engine(resolve_database(url)).dispose()
        engine = writable_engine(pg_admin_url)
        with engine.connect() as conn_:
            conn_.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()
    assert "invalid input syntax for type integer" in prompts[1]
    assert SECRET not in prompts[1] and "Secret-Cell" not in prompts[1]


# --- the repair memory -----------------------------------------------------------------------

QUESTION = "Which singers from France are older than 40?"
REPAIR = {
    "question": QUESTION,
    "wrong_sql": "SELECT name FROM singer WHERE country = 'France'",
    "fixed_sql": "SELECT name FROM singer WHERE country = 'France' AND age > 40",
    "error": "the reviewer saw 'Zq7 Secret-Cell 4411' in the rows",
}


def _seen(store: InMemoryStore, namespace: tuple[str, ...] | None) -> list[str]:
    namespaces = [SHARED_NAMESPACE, *([namespace] if namespace else [])]
    found = retrieve_similar_repairs(store, QUESTION, 5, namespaces=namespaces)
    return [r["fixed_sql"] for r in found]


Scope = Callable[[str, str | None, str, str | None], tuple[str, ...] | None]


def test_a_recorded_repair_stays_with_its_user_database_and_thread() -> None:
    store = InMemoryStore()
    db_a, db_b = "postgresql://a:pw@h/sales", "postgresql://b:pw@h/hr"
    mine = recorded_namespace("thread", "alice", db_a, "thread-1")
    record_repair(store, REPAIR, mine)
    assert _seen(store, mine) == [REPAIR["fixed_sql"]]
    for other in (
        recorded_namespace("thread", "bob", db_b, "thread-9"),  # the user B
        recorded_namespace("thread", "bob", db_a, "thread-1"),  # same database and thread id
        recorded_namespace("thread", "alice", db_a, "thread-2"),  # her other thread
        recorded_namespace("thread", "alice", db_b, "thread-1"),  # her other database
        recorded_namespace("thread", None, db_a, "thread-1"),
        recorded_namespace("user", "bob", db_a, None),
        recorded_namespace("database", "bob", db_a, None),
    ):
        assert _seen(store, other) == [], other
    assert recorded_namespace("thread", "alice", db_a, None) is None  # no thread: nothing kept


def test_sharing_is_on_purpose_and_bounded_by_the_database() -> None:
    store = InMemoryStore()
    db_a, db_b = "sales.sqlite", "hr.sqlite"
    record_repair(store, REPAIR, recorded_namespace("user", "alice", db_a, "t1"))
    assert _seen(store, recorded_namespace("user", "alice", db_a, "t2")) == [REPAIR["fixed_sql"]]
    assert _seen(store, recorded_namespace("user", "bob", db_a, "t2")) == []
    shared = recorded_namespace("database", "alice", db_a, "t1")
    record_repair(store, REPAIR, shared)
    assert _seen(store, recorded_namespace("database", "bob", db_a, "t9")) == [REPAIR["fixed_sql"]]
    assert _seen(store, recorded_namespace("database", "bob", db_b, "t9")) == []
    # seeded training repairs are shared on purpose: everyone reads them
    seed_repair_memory(store, [{**REPAIR, "fixed_sql": "SELECT 1", "error": ""}])
    assert _seen(store, recorded_namespace("thread", "carol", db_b, "t3")) == ["SELECT 1"]
