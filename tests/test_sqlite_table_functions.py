"""The table-valued functions the guard allows on SQLite (`json_each`, `json_tree`) run: SQLite
declares each on a connection's first use, which its authorizer saw as a write to sqlite_master
("vtable constructor failed"). They run on every statement connection, old or new, also after
another connection changed the schema, and the authorizer still refuses what it refused."""

from __future__ import annotations

import json
import random
import sqlite3
from typing import Any
from unittest import mock

from macsql.database import relation_inventory
from macsql.database.connection import DatabaseRef
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import GuardVerdict


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["int", "text", "float", "null", "list", "dict"] if depth < 3 else ["int"])
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "dict":
        return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    return {"int": rng.randint(-99, 99), "text": "é'x\"", "float": 0.5, "null": None}[kind]


def _quoted(value: Any) -> str:
    return "'" + json.dumps(value).replace("'", "''") + "'"


def test_json_each_reads_generated_documents_as_python_does(concert: DatabaseRef) -> None:
    rng = random.Random(17)
    for _ in range(40):
        document = [_value(rng) for _ in range(rng.randint(1, 5))]
        result = execute_sql(concert, f"SELECT value, type FROM json_each({_quoted(document)})")
        assert result.outcome == Outcome.OK, result.error
        assert len(result.rows) == len(document)
        for (value, kind), expected in zip(result.rows, document, strict=True):
            if kind in ("array", "object"):
                assert json.loads(value) == expected
            else:
                assert value == expected


def test_json_tree_and_a_join_with_a_table(concert: DatabaseRef) -> None:
    tree = execute_sql(concert, """SELECT key, type FROM json_tree('{"a": [1, "x"]}')""")
    assert tree.outcome == Outcome.OK, tree.error
    assert tree.rows == [(None, "object"), ("a", "array"), (0, "integer"), (1, "text")]
    joined = execute_sql(
        concert,
        "SELECT s.name, j.value FROM singer AS s, json_each(json_array(s.name)) AS j "
        "ORDER BY s.name LIMIT 2",
    )
    assert joined.outcome == Outcome.OK, joined.error
    assert all(name == value for name, value in joined.rows) and len(joined.rows) == 2


def test_they_still_run_after_another_connection_changes_the_schema(
    concert: DatabaseRef,
) -> None:
    assert execute_sql(concert, "SELECT count(*) FROM json_each('[1]')").rows == [(1,)]
    assert concert.sqlite_path is not None
    with sqlite3.connect(concert.sqlite_path) as other:
        other.execute("CREATE TABLE added (x int)")
    again = execute_sql(concert, "SELECT count(*) FROM json_each('[1, 2]')")
    assert again.outcome == Outcome.OK and again.rows == [(2,)], again.error


def test_the_authorizer_still_refuses_writes(concert: DatabaseRef) -> None:
    assert execute_sql(concert, "SELECT count(*) FROM json_each('[1]')").outcome == Outcome.OK
    slipped = [
        "UPDATE singer SET name = 'x'",
        "CREATE TEMP TABLE evil (x int)",
        "PRAGMA query_only = OFF",
    ]
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        for statement in slipped:
            result = execute_sql(concert, statement)
            assert result.outcome == Outcome.REJECTED, (statement, result.error)
        # SQLite refuses this one itself, before asking the authorizer.
        result = execute_sql(concert, "UPDATE sqlite_master SET sql = ''")
        assert result.error == "table sqlite_master may not be modified"
