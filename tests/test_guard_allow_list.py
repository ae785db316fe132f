"""The guard's allow-lists: only side-effect-free functions and the user's own relations.

Every statement refused here passed the earlier deny-list guard (issue 13): PostgreSQL's index
maintenance functions rewrote index pages inside READ ONLY transactions, `crosstab`,
`connectby` and `xpath_table` ran SQL given as text (`pg_terminate_backend` killed a session
through them), and a superuser could read `pg_authid`, `pg_hba_file_rules` and
`pg_file_settings`.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from unittest import mock

import pytest
from conftest import BIRD, SPIDER, spider_db

from macsql.cli.common import parse_context_fields
from macsql.core.context import BaseContext, Context, ContextError
from macsql.database import relation_inventory
from macsql.database.connection import get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql, sqlite_authorizer
from macsql.database.guard import (
    GuardKind,
    GuardPolicy,
    GuardVerdict,
    check_statement,
    function_allowed,
    make_policy,
)
from macsql.database.guard_relations import Relations
from macsql.database.relation_inventory import clear_inventories, relations_of
from macsql.evals.scoring import Scorer
from macsql.nodes.common.executor import execute_and_analyse

MAINTENANCE = [
    "SELECT brin_summarize_new_values('concert_year_brin')",
    "SELECT brin_summarize_range('concert_year_brin', 0)",
    "SELECT brin_desummarize_range('concert_year_brin', 0)",
    "SELECT gin_clean_pending_list('singer_name_gin')",
    "SELECT 1 FROM singer WHERE brin_summarize_new_values('i') > 0",
]
SQL_IN_TEXT = [
    "SELECT * FROM crosstab('SELECT pg_terminate_backend(1), 1, 1') AS t(a int, b int)",
    "SELECT * FROM connectby('singer', 'singer_id', 'age', '1', 0) AS t(a text, b text, c int)",
    "SELECT * FROM xpath_table('k', 'x', 'singer', '/a', 'true') AS t(k int, a text)",
    "SELECT x FROM singer, LATERAL crosstab('SELECT 1, 1, 1') AS t(x int, y int)",
    "SELECT count(*) FROM (SELECT crosstab('SELECT 1, 1, 1')) AS s",
]
CATALOGS = [
    "SELECT rolname, rolpassword FROM pg_authid",
    "SELECT * FROM pg_catalog.pg_authid",
    "SELECT * FROM pg_hba_file_rules",
    "SELECT * FROM pg_file_settings",
    "SELECT usename, passwd FROM pg_shadow",
    "SELECT pid, query FROM pg_stat_activity",
    "SELECT * FROM pg_catalog.pg_stat_activity AS a JOIN singer ON true",
    "SELECT * FROM singer WHERE name IN (SELECT rolname FROM pg_roles)",
    "WITH pg_authid AS (SELECT * FROM pg_authid) SELECT * FROM pg_authid",
    "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM pg_user",
    "SELECT * FROM information_schema.role_table_grants",
    "SELECT * FROM concert_singer.pg_catalog.pg_authid",
]

PG_RELATIONS = Relations(
    user=frozenset(
        ("public", name) for name in ("singer", "concert", "stadium", "singer_in_concert")
    ),
    system=frozenset(
        ("pg_catalog", name)
        for name in (
            "pg_authid",
            "pg_hba_file_rules",
            "pg_file_settings",
            "pg_shadow",
            "pg_stat_activity",
            "pg_roles",
            "pg_user",
        )
    )
    | {("information_schema", "tables"), ("information_schema", "role_table_grants")},
    search_path=("pg_catalog", "public"),
    system_schemas=frozenset({"pg_catalog", "information_schema", "pg_toast"}),
    catalog="concert_singer",
)
PG_POLICY = make_policy(PG_RELATIONS)


@pytest.mark.parametrize("sql", MAINTENANCE + SQL_IN_TEXT)
@pytest.mark.parametrize("policy", [None, PG_POLICY], ids=["no-inventory", "inventory"])
def test_postgres_maintenance_and_sql_in_text_functions_are_refused(
    sql: str, policy: object
) -> None:
    verdict = check_statement(sql, "postgres", PG_POLICY if policy else None)
    assert verdict.kind == GuardKind.FORBIDDEN_FUNCTION, verdict
    reason = verdict.reason or ""
    name = reason.split("function ", 1)[1].split("()", 1)[0]
    assert name in sql  # the refusal names the function...
    assert "Context.allowed_functions" in reason  # ...and the field that extends the list


@pytest.mark.parametrize("sql", CATALOGS)
def test_postgres_catalogs_are_refused_with_the_inventory(sql: str) -> None:
    verdict = check_statement(sql, "postgres", PG_POLICY)
    assert verdict.kind == GuardKind.FORBIDDEN_RELATION, verdict
    assert "Context.allowed_relations" in (verdict.reason or "")


@pytest.mark.parametrize("sql", CATALOGS)
def test_postgres_catalogs_are_refused_without_an_inventory(sql: str) -> None:
    verdict = check_statement(sql, "postgres")
    assert verdict.kind == GuardKind.FORBIDDEN_RELATION, verdict


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM singer JOIN singer_in_concert USING (singer_id)",
        "SELECT * FROM public.singer",
        "SELECT * FROM concert_singer.public.singer",
        "TABLE singer",
        "SELECT table_name FROM information_schema.tables",
        "WITH pg_authid AS (SELECT 1 AS x) SELECT x FROM pg_authid",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) "
        "SELECT * FROM r",
        "SELECT x FROM generate_series(1, 3) AS x",
        "SELECT pg_catalog.lower(name) FROM singer",
        "SELECT jsonb_build_object('a', 1) ->> 'a', string_agg(name, ',') FROM singer",
    ],
)
def test_postgres_user_relations_ctes_and_safe_functions_are_allowed(sql: str) -> None:
    assert check_statement(sql, "postgres", PG_POLICY).allowed


def test_a_cte_shadows_a_catalog_only_where_postgres_resolves_it() -> None:
    # quoted names keep their case in PostgreSQL: "PG_AUTHID" is not pg_authid
    sql = 'WITH "PG_AUTHID" AS (SELECT 1) SELECT * FROM pg_authid'
    assert check_statement(sql, "postgres", PG_POLICY).kind == GuardKind.FORBIDDEN_RELATION
    # a later sibling is not visible to an earlier CTE, nor is a CTE to its own body
    sql = "WITH a AS (SELECT * FROM pg_authid), pg_authid AS (SELECT 1) SELECT * FROM a"
    assert check_statement(sql, "postgres", PG_POLICY).kind == GuardKind.FORBIDDEN_RELATION
    # a CTE inside a subquery does not cover the outer query
    sql = "SELECT * FROM (WITH pg_authid AS (SELECT 1) SELECT * FROM pg_authid) s, pg_authid"
    assert check_statement(sql, "postgres", PG_POLICY).kind == GuardKind.FORBIDDEN_RELATION


def test_a_schema_qualified_function_is_that_schemas_function() -> None:
    verdict = check_statement("SELECT public.lower(name) FROM singer", "postgres", PG_POLICY)
    assert verdict.kind == GuardKind.FORBIDDEN_FUNCTION
    assert "public.lower()" in (verdict.reason or "")
    policy = make_policy(PG_RELATIONS, allowed_functions=["public.lower"])
    assert check_statement("SELECT public.lower(name) FROM singer", "postgres", policy).allowed


def test_unknown_table_is_refused_as_unknown_with_the_inventory() -> None:
    verdict = check_statement("SELECT * FROM singers", "postgres", PG_POLICY)
    assert verdict.kind == GuardKind.UNKNOWN_RELATION
    assert (verdict.reason or "").startswith("no such table: singers")
    verdict = check_statement("SELECT * FROM other_schema.singer", "postgres", PG_POLICY)
    assert verdict.kind == GuardKind.UNKNOWN_RELATION


def test_context_lists_extend_the_allow_lists_but_never_to_known_unsafe_functions() -> None:
    sql = "SELECT my_pure_fn(name) FROM singer"
    assert check_statement(sql, "postgres", PG_POLICY).kind == GuardKind.FORBIDDEN_FUNCTION
    extended = make_policy(PG_RELATIONS, allowed_functions=[" My_Pure_Fn "])
    assert check_statement(sql, "postgres", extended).allowed
    sleepy = make_policy(PG_RELATIONS, allowed_functions=["pg_sleep", "pg_read_file"])
    for sql in ("SELECT pg_sleep(1)", "SELECT pg_read_file('/etc/passwd')"):
        verdict = check_statement(sql, "postgres", sleepy)
        assert verdict.kind == GuardKind.FORBIDDEN_FUNCTION
        assert "not allowed in a query" in (verdict.reason or "")
    sql = "SELECT pid FROM pg_stat_activity"
    assert check_statement(sql, "postgres", PG_POLICY).kind == GuardKind.FORBIDDEN_RELATION
    for entry in ("pg_stat_activity", "pg_catalog.pg_stat_activity"):
        widened = make_policy(PG_RELATIONS, allowed_relations=[entry])
        assert check_statement(sql, "postgres", widened).allowed
    # `schema.name` opens that schema's relation only
    narrow = make_policy(PG_RELATIONS, allowed_relations=["other.pg_stat_activity"])
    assert not check_statement(sql, "postgres", narrow).allowed


def test_a_built_in_name_that_a_user_schema_also_defines_is_refused() -> None:
    shadowed = dataclasses.replace(PG_RELATIONS, user_functions=frozenset({"lower", "crosstab"}))
    for sql in ("SELECT lower(name) FROM singer", 'SELECT "Lower"(name) FROM singer'):
        verdict = check_statement(sql, "postgres", make_policy(shadowed))
        assert verdict.kind == GuardKind.FORBIDDEN_FUNCTION, (sql, verdict)
        assert "defined in the database's own schemas" in (verdict.reason or "")
    trusted = make_policy(shadowed, allowed_functions=["lower"])
    assert check_statement("SELECT lower(name) FROM singer", "postgres", trusted).allowed
    assert check_statement("SELECT upper(name) FROM singer", "postgres", make_policy(shadowed))


# --- SQLite -------------------------------------------------------------------------------------


def sqlite_policy(db_id: str = "concert_singer") -> GuardPolicy:
    return make_policy(relations_of(resolve_database(str(spider_db(db_id)))))


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT * FROM sqlite_temp_master", GuardKind.FORBIDDEN_RELATION),
        ("SELECT * FROM temp.sqlite_master", GuardKind.FORBIDDEN_RELATION),
        ("SELECT * FROM sqlite_stat1", GuardKind.FORBIDDEN_RELATION),
        ("SELECT * FROM other.singer", GuardKind.UNKNOWN_RELATION),
        ("SELECT * FROM singers", GuardKind.UNKNOWN_RELATION),
        ("SELECT randomblob(1000000000)", GuardKind.FORBIDDEN_FUNCTION),
        ("SELECT zeroblob(1000000000)", GuardKind.FORBIDDEN_FUNCTION),
        ("SELECT sqlite_log(1, 'x')", GuardKind.FORBIDDEN_FUNCTION),
        ("SELECT fts3_tokenizer('simple')", GuardKind.FORBIDDEN_FUNCTION),
        ("SELECT * FROM pragma_database_list", GuardKind.UNKNOWN_RELATION),
        ("SELECT * FROM pragma_table_info('singer')", GuardKind.FORBIDDEN_FUNCTION),
        ("SELECT rtreenode(2, x'00') FROM singer", GuardKind.FORBIDDEN_FUNCTION),
    ],
)
@pytest.mark.needs_data("spider")
def test_sqlite_refusals(sql: str, kind: GuardKind) -> None:
    verdict = check_statement(sql, "sqlite", sqlite_policy())
    assert verdict.kind == kind, verdict


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name, sql FROM sqlite_master",
        "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table'",
        "SELECT * FROM main.singer",
        "SELECT * FROM SINGER",
        "SELECT value FROM json_each('[1, 2]')",
        "WITH c AS (SELECT 1 AS x) SELECT x FROM c",
        "SELECT printf('%d', age), instr(name, 'a'), julianday('now') FROM singer",
    ],
)
@pytest.mark.needs_data("spider")
def test_sqlite_allowed(sql: str) -> None:
    assert check_statement(sql, "sqlite", sqlite_policy()).allowed


def sqlite_builtins() -> list[tuple[str, int]]:
    conn = sqlite3.connect(":memory:")
    try:
        rows = conn.execute("SELECT DISTINCT name, narg FROM pragma_function_list").fetchall()
    finally:
        conn.close()
    return sorted((name, narg) for name, narg in rows if name not in ("->", "->>"))


def guard_allows_call(name: str, narg: int) -> bool | None:
    """The guard's verdict on a call of `name`, or None when sqlglot parses no such call."""
    for count in (narg,) if narg >= 0 else (1, 2, 3):
        args = ", ".join(["'1'"] * count)
        verdict = check_statement(f"SELECT {name}({args})", "sqlite")
        if verdict.kind != GuardKind.SYNTAX:
            return verdict.allowed
    return None


def test_guard_and_sqlite_authorizer_agree_on_every_sqlite_builtin() -> None:
    disagreements = []
    for name, narg in sqlite_builtins():
        guard = guard_allows_call(name, narg)
        engine = function_allowed(name, "sqlite")
        if guard is not None and guard != engine:
            disagreements.append((name, narg, guard, engine))
    assert disagreements == []
    compared = [
        name for name, narg in sqlite_builtins() if guard_allows_call(name, narg) is not None
    ]
    assert len(compared) >= 130
    # and the list is not empty on either side
    assert function_allowed("substr", "sqlite") and not function_allowed("load_extension", "sqlite")


@pytest.mark.needs_data("spider")
def test_sqlite_authorizer_denies_what_the_guard_refuses_when_the_guard_is_bypassed() -> None:
    ref = resolve_database(str(spider_db("concert_singer")))
    allow_all = GuardVerdict(True, GuardKind.OK)
    with mock.patch.object(relation_inventory, "guard_verdict", return_value=allow_all):
        for sql in ("SELECT randomblob(10)", "SELECT sqlite_log(1, 'x')"):
            result = execute_sql(ref, sql)
            assert result.outcome == Outcome.REJECTED, (sql, result)
            assert "not authorized" in (result.error or "")
        ok = execute_sql(ref, "SELECT upper(name), count(*) FROM singer GROUP BY 1")
        assert ok.outcome == Outcome.OK and len(ok.rows) == 6
    # the authorizer takes the user's extension too
    function = sqlite3.SQLITE_FUNCTION
    assert sqlite_authorizer(frozenset({"my_fn"}))(function, None, "my_fn", None, None) == 0
    assert sqlite_authorizer()(function, None, "my_fn", None, None) == sqlite3.SQLITE_DENY
    # known-unsafe functions stay denied even when a user lists them
    unsafe = sqlite_authorizer(frozenset({"randomblob"}))
    assert unsafe(function, None, "randomblob", None, None) == sqlite3.SQLITE_DENY


def test_executor_reports_an_unknown_table_as_unknown_and_finds_a_new_one(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE a (x INT)")
    conn.commit()
    ref = resolve_database(str(path))
    try:
        missing = execute_sql(ref, "SELECT * FROM b")
        assert missing.outcome == Outcome.UNKNOWN_OBJECT
        assert missing.error_class == "GuardRejection"
        assert (missing.error or "").startswith("no such table: b")
        conn.execute("CREATE TABLE b (y INT)")
        conn.execute("INSERT INTO b VALUES (7)")
        conn.commit()
        assert execute_sql(ref, "SELECT y FROM b").rows == [(7,)]
    finally:
        conn.close()
        get_engine(ref).dispose()
        clear_inventories()


def test_executor_threads_the_context_lists_to_the_guard(tmp_path: Path) -> None:
    ref = resolve_database(sequence_db(tmp_path))
    sql = "SELECT name, seq FROM sqlite_sequence"
    try:
        refused = execute_sql(ref, sql)
        assert refused.outcome == Outcome.REJECTED
        assert "Context.allowed_relations" in (refused.error or "")
        allowed = execute_sql(ref, sql, allowed_relations=("sqlite_sequence",))
        assert allowed.outcome == Outcome.OK and allowed.rows == [("a", 1)]
    finally:
        get_engine(ref).dispose()


# --- gold queries: the allow-lists refuse none ---------------------------------------------------


@pytest.mark.needs_data("spider")
def test_every_spider_dev_gold_query_passes_with_its_database_inventory() -> None:
    items = json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
    refused = []
    checked = 0
    for item in items:
        path = spider_db(item["db_id"])
        if not path.is_file():
            continue
        policy = make_policy(relations_of(resolve_database(str(path))))
        verdict = check_statement(item["query"], "sqlite", policy)
        checked += 1
        if not verdict.allowed:
            refused.append((item["db_id"], item["query"], verdict.reason))
    assert checked == 972
    assert refused == []


@pytest.mark.needs_data("spider", "bird")
def test_every_bird_dev_gold_query_passes_with_its_tables() -> None:
    tables = {
        entry["db_id"]: Relations(
            frozenset(("main", name.lower()) for name in entry["table_names_original"]),
            frozenset(),
            ("main",),
        )
        for entry in json.loads((BIRD / "dev_tables.json").read_text(encoding="utf-8"))
    }
    items = json.loads((BIRD / "dev.json").read_text(encoding="utf-8"))
    assert len(items) == 1534
    refused = [
        (item["db_id"], item["SQL"], verdict.reason)
        for item in items
        if not (
            verdict := check_statement(item["SQL"], "sqlite", make_policy(tables[item["db_id"]]))
        ).allowed
    ]
    assert refused == []


# --- MySQL and DuckDB ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT sleep(10)", "mysql"),
        ("SELECT benchmark(100000000, md5('x'))", "mysql"),
        ("SELECT load_file('/etc/passwd')", "mysql"),
        ("SELECT get_lock('x', 10)", "mysql"),
        ("SELECT * FROM mysql.user", "mysql"),
        ("SELECT * FROM performance_schema.threads", "mysql"),
        ("SELECT * FROM read_csv('/etc/passwd')", "duckdb"),
        ("SELECT * FROM read_parquet('x.parquet')", "duckdb"),
        ("SELECT * FROM read_csv('/etc/passwd')", "postgres"),
        ("SELECT * FROM duckdb_settings()", "duckdb"),
        ("SELECT getenv('HOME')", "duckdb"),
        ("SELECT * FROM IDENTIFIER('secret_table')", "snowflake"),
    ],
)
def test_other_dialects_refuse_files_sleep_locks_and_catalogs(sql: str, dialect: str) -> None:
    verdict = check_statement(sql, dialect)
    assert not verdict.allowed
    assert verdict.kind in (GuardKind.FORBIDDEN_FUNCTION, GuardKind.FORBIDDEN_RELATION), verdict


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT date_format(now(), '%Y'), ifnull(name, ''), group_concat(name) FROM t", "mysql"),
        ("SELECT list_value(1, 2), strftime(now(), '%Y'), median(x) FROM t", "duckdb"),
        ("SELECT table_name FROM information_schema.columns", "mysql"),
    ],
)
def test_other_dialects_allow_ordinary_queries(sql: str, dialect: str) -> None:
    assert check_statement(sql, dialect).allowed, check_statement(sql, dialect).reason


# --- the Context fields that extend the lists, through every call site ---------------------------


def test_context_fields_are_in_base_context_and_checked() -> None:
    names = [f.name for f in dataclasses.fields(BaseContext)]
    assert {"allowed_functions", "allowed_relations"} <= set(names)
    assert BaseContext(allowed_functions=["my_fn"]).allowed_functions == ("my_fn",)  # type: ignore[arg-type]
    for bad in (("",), "my_fn", (1,)):
        with pytest.raises(ContextError, match="allowed_relations"):
            BaseContext(allowed_relations=bad)  # type: ignore[arg-type]
    parsed = parse_context_fields(["allowed_relations= a , main.b ,", "allowed_functions="])
    assert parsed == {"allowed_relations": ("a", "main.b"), "allowed_functions": ()}
    assert Context(**parsed).allowed_relations == ("a", "main.b")  # type: ignore[arg-type]


def sequence_db(tmp_path: Path) -> str:
    path = tmp_path / "counted.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE a (x INTEGER PRIMARY KEY AUTOINCREMENT)")
    conn.execute("INSERT INTO a DEFAULT VALUES")
    conn.commit()
    conn.close()
    return str(path)


def test_executor_node_and_scorer_take_the_context_lists(tmp_path: Path) -> None:
    db = sequence_db(tmp_path)
    sql = "SELECT name, seq FROM sqlite_sequence"
    try:
        refused = execute_and_analyse(db, sql, BaseContext())
        assert refused["outcome"] == Outcome.REJECTED
        record = execute_and_analyse(db, sql, BaseContext(allowed_relations=("sqlite_sequence",)))
        assert record["outcome"] == Outcome.OK and record["rows"] == [["a", 1]]
        assert not Scorer("spider")._run(db, sql).ok
        widened = Scorer("spider", allowed_relations=("sqlite_sequence",))
        assert widened._run(db, sql).rows == [("a", 1)]
    finally:
        get_engine(resolve_database(db)).dispose()


def test_duckdb_file_paths_are_refused_with_an_inventory_too() -> None:
    duck = make_policy(Relations(frozenset({("main", "singer")}), frozenset(), ("main",)))
    assert check_statement("SELECT * FROM singer", "duckdb", duck).allowed
    verdict = check_statement("SELECT * FROM '/etc/passwd'", "duckdb", duck)
    assert verdict.kind == GuardKind.FORBIDDEN_FUNCTION
    assert "file path" in (verdict.reason or "")
