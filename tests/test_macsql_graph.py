"""The MAC-SQL graph with scripted models: every node, every route, every bound."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import concert_db

from macsql.graph.macsql_graph import graph

CONCERT = str(concert_db())


def sql_reply(sql: str) -> str:
    return f"Sub question 1: all of it\nSQL\n```sql\n{sql}\n```\nQuestion Solved."


def run(
    context: object, question: str = "Name the singers", db: str = CONCERT, evidence: str = ""
) -> dict:
    return graph.invoke({"question": question, "db": db, "evidence": evidence}, context=context)


def test_first_try_success_goes_straight_to_the_end(scripted) -> None:
    model, context = scripted([sql_reply("SELECT Name FROM singer ORDER BY Age LIMIT 1")])
    out = run(context)
    assert out["status"] == "ok" and out["outcome"] == "ok"
    assert out["attempts"] == 1
    assert out["rows"] == [["Teo Alvarez"]] and out["columns"] == ["Name"]
    assert out["selector_used"] is False
    assert len(model.prompts) == 1  # no Selector, no Refiner
    assert set(out["usage"]) == {"decomposer"}


def test_output_is_narrow(scripted) -> None:
    _, context = scripted([sql_reply("SELECT 1")])
    out = run(context)
    assert set(out) <= {
        "sql",
        "status",
        "outcome",
        "error",
        "columns",
        "rows",
        "truncated",
        "attempts",
        "selector_used",
        "selector_fallback",
        "usage",
        "fallbacks",
        "linking",
        "standalone_question",
    }
    assert "schema" not in out and "candidate_sql" not in out
    assert "turns" not in out and "asked" not in out and "answer" not in out


def test_refiner_gets_the_error_and_its_class(scripted) -> None:
    model, context = scripted(
        [sql_reply("SELECT nme FROM singer"), "Wrong column.\n```sql\nSELECT Name FROM singer\n```"]
    )
    out = run(context)
    assert out["attempts"] == 2 and out["status"] == "ok"
    assert out["sql"] == "SELECT Name FROM singer"
    refiner_prompt = model.prompts[1]
    assert "no such column: nme" in refiner_prompt
    assert "OperationalError" in refiner_prompt
    assert "unknown_table_or_column" in refiner_prompt
    assert "SELECT nme FROM singer" in refiner_prompt


@pytest.mark.parametrize("max_try_times", [1, 2, 3, 5])
def test_refine_loop_stops_at_exactly_max_try_times(scripted, max_try_times: int) -> None:
    always_wrong = lambda prompt: "```sql\nSELECT missing_column FROM singer\n```"  # noqa: E731
    model, context = scripted(always_wrong, max_try_times=max_try_times)
    out = run(context)
    assert out["attempts"] == max_try_times
    assert out["status"] == "failed"
    assert out["outcome"] == "unknown_table_or_column"
    assert "missing_column" in out["error"]
    # Decomposer once, then one Refiner call per failed execution but the last.
    assert len(model.prompts) == max_try_times


def test_returned_sql_is_always_one_that_was_executed(scripted) -> None:
    # The official code returned the last refined SQL without running it.
    model, context = scripted(
        [
            sql_reply("SELECT a FROM nowhere"),
            "```sql\nSELECT b FROM nowhere2\n```",
            "```sql\nSELECT Name FROM singer\n```",
        ],
        max_try_times=2,
    )
    out = run(context)
    assert out["attempts"] == 2
    assert out["sql"] == "SELECT b FROM nowhere2"
    assert len(model.prompts) == 2  # the third reply was never asked for


def test_best_executed_attempt_is_kept(scripted) -> None:
    # BIRD style: empty result triggers a refine; a later failing query must not replace it.
    _model, context = scripted(
        [
            sql_reply("SELECT Name FROM singer WHERE Age > 1000"),
            "```sql\nSELECT Nme FROM singer\n```",
        ],
        max_try_times=2,
        dataset_style="bird",
    )
    out = run(context)
    assert out["attempts"] == 2
    assert out["sql"] == "SELECT Name FROM singer WHERE Age > 1000"
    assert out["outcome"] == "empty_result" and out["status"] == "ok"


def test_empty_result_is_accepted_in_spider_style(scripted) -> None:
    model, context = scripted(
        [sql_reply("SELECT Name FROM singer WHERE Age > 1000")], dataset_style="spider"
    )
    out = run(context)
    assert out["attempts"] == 1 and out["outcome"] == "ok" and out["rows"] == []
    assert "Question Solved" in model.prompts[0]  # spider variant asks for direct answers
    assert "[Evidence]" not in model.prompts[0].split("Your task.")[1]


def test_null_result_triggers_refine_in_bird_style(tmp_path: Path, scripted) -> None:
    path = tmp_path / "n.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, None), (2, "x")])
    conn.commit()
    conn.close()
    model, context = scripted(
        [sql_reply("SELECT b FROM t"), "```sql\nSELECT b FROM t WHERE b IS NOT NULL\n```"]
    )
    out = run(context, db=str(path))
    assert out["attempts"] == 2 and out["rows"] == [["x"]]
    assert "null_result" in model.prompts[1]


def test_reply_without_sql_goes_to_the_refiner_as_an_error(scripted) -> None:
    model, context = scripted(
        ["I believe the singer table holds the answer.", "```sql\nSELECT Name FROM singer\n```"]
    )
    out = run(context)
    assert out["status"] == "ok" and out["attempts"] == 1
    assert "held no SQL query" in model.prompts[1]
    assert "no_sql" in model.prompts[1]


def test_prose_only_model_fails_cleanly_without_a_prediction(scripted) -> None:
    model, context = scripted(lambda prompt: "Sorry, I cannot help with that.", max_try_times=2)
    out = run(context)
    assert out["status"] == "failed"
    assert out["sql"] == "" and out["attempts"] == 0
    assert "held no SQL query" in out["error"]
    assert len(model.prompts) == 2  # max_try_times=2 tries: the Decomposer's and one refine


def test_model_failure_is_a_clear_status(scripted) -> None:
    _model, context = scripted([TimeoutError("read timed out")])
    out = run(context)
    assert out["status"] == "failed"
    assert "model call failed" in out["error"] and "TimeoutError" in out["error"]


def test_missing_database_and_empty_question(scripted) -> None:
    model, context = scripted([])
    out = run(context, db="/nonexistent/x.sqlite")
    assert out["status"] == "failed" and "database file not found" in out["error"]
    out = run(context, question="   ")
    assert out["status"] == "failed" and "question is empty" in out["error"]
    assert model.prompts == []


def test_writes_are_refused_and_reported(scripted) -> None:
    model, context = scripted(
        [sql_reply("DELETE FROM singer"), "```sql\nSELECT count(*) FROM singer\n```"]
    )
    out = run(context)
    assert out["rows"] == [[6]]
    assert "rejected" in model.prompts[1]


def test_selector_is_skipped_on_a_small_schema(scripted) -> None:
    _model, context = scripted([sql_reply("SELECT 1")])
    assert run(context)["selector_used"] is False


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory: pytest.TempPathFactory, bird_dir: Path) -> Path:
    """BIRD's california_schools (89 columns), schema-only, with its descriptions beside it."""
    from macsql.evals.bird_schema import build_schema_only_layout

    root = build_schema_only_layout(
        bird_dir, tmp_path_factory.mktemp("bird"), db_ids=["california_schools"]
    )
    return root / "dev_databases" / "california_schools" / "california_schools.sqlite"


def test_selector_runs_on_a_wide_schema_and_prunes(scripted, wide_db: Path) -> None:
    selection = (
        '```json\n{"frpm": ["County Name", "Free Meal Count (K-12)", '
        '"Enrollment (K-12)"], "satscores": "drop_all", "schools": "keep_all"}\n```'
    )
    model, context = scripted(
        [selection, sql_reply("SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm")],
        max_try_times=1,  # the schema-only database has no rows: BIRD style would refine
    )
    out = run(
        context,
        db=str(wide_db),
        question="Highest free rate in Alameda?",
        evidence="rate = count / enrollment",
    )
    assert out["selector_used"] is True
    decomposer_prompt = model.prompts[1]
    schema_part = decomposer_prompt.split("Your task.")[1]
    assert "# Table: satscores" not in schema_part
    assert "CDSCode" in schema_part  # the key of frpm stays
    assert "Charter School (Y/N)" not in schema_part.split("# Table: schools")[0]
    assert "satscores" not in schema_part.split("[Foreign keys]")[1].split("[Question]")[0]
    assert out["attempts"] == 1
    assert set(out["usage"]) == {"selector", "decomposer"}


def test_selector_unparseable_reply_falls_back_and_says_so(scripted, wide_db: Path) -> None:
    model, context = scripted(["keep the frpm table please", sql_reply("SELECT 1")])
    out = run(context, db=str(wide_db))
    assert out["selector_used"] is True
    assert "holds no table map" in out["selector_fallback"]
    assert "# Table: satscores" in model.prompts[1]  # full schema kept


def test_selector_thresholds_are_context_fields(scripted) -> None:
    _model, context = scripted(
        ['{"singer": "keep_all"}', sql_reply("SELECT 1")], selector_max_total_columns=5
    )
    assert run(context)["selector_used"] is True


def test_analysis_rules_per_dataset_style() -> None:
    from macsql.database.execution import Outcome
    from macsql.nodes.common.executor import analyse

    assert analyse(Outcome.OK, [], "bird") == Outcome.EMPTY_RESULT
    assert analyse(Outcome.OK, [], "spider") == Outcome.OK
    assert analyse(Outcome.OK, [(1, None)], "bird") == Outcome.NULL_RESULT
    assert analyse(Outcome.OK, [(1, None)], "spider") == Outcome.OK
    assert analyse(Outcome.TIMEOUT, [], "bird") == Outcome.TIMEOUT


def test_best_try_prefers_passing_then_ran_then_latest() -> None:
    from macsql.nodes.common.executor import best_try

    tries = [
        {"sql": "a", "outcome": "syntax_error"},
        {"sql": "b", "outcome": "empty_result"},
        {"sql": "c", "outcome": "timeout"},
    ]
    assert best_try(tries)["sql"] == "b"
    assert best_try([*tries, {"sql": "d", "outcome": "ok"}])["sql"] == "d"
    assert best_try([tries[0], tries[2]])["sql"] == "c"


def test_needs_selector_uses_the_official_thresholds() -> None:
    from macsql.core.context import Context
    from macsql.nodes.macsql.selector import needs_selector

    def state(widths: list[int]) -> dict:
        return {"schema": {"tables": [{"columns": [{}] * w} for w in widths]}}

    assert not needs_selector(state([6, 6, 6, 6, 6]), Context())  # avg 6, total 30
    assert needs_selector(state([7]), Context())  # avg over 6
    assert needs_selector(state([5] * 7), Context())  # total 35 over 30
    assert not needs_selector(state([7]), Context(selector_max_avg_columns=7))


def test_a_thread_answering_two_questions_counts_each_ones_usage(scripted) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from macsql.graph.macsql_graph import builder

    _model, context = scripted(
        [
            sql_reply("SELECT nme FROM singer"),
            "```sql\nSELECT Name FROM singer\n```",
            # On a thread the second question has history: it is first made standalone.
            "Question: q2\nBuilds on the previous SQL: no",
            sql_reply("SELECT count(*) FROM singer"),
        ]
    )
    threaded = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = threaded.invoke({"question": "q1", "db": CONCERT}, config, context=context)
    second = threaded.invoke({"question": "q2", "db": CONCERT}, config, context=context)
    assert first["usage"]["decomposer"]["calls"] == 1 and first["usage"]["refiner"]["calls"] == 1
    assert second["attempts"] == 1 and second["rows"] == [[6]]
    assert set(second["usage"]) == {"contextualizer", "decomposer"}
    assert second["usage"]["decomposer"]["calls"] == 1


def test_the_demo_database_is_reachable_by_name_from_the_python_api(scripted) -> None:
    """`{"db": "demo"}` works in Studio and the Python API as it does in the CLI."""
    _, context = scripted([sql_reply("SELECT count(*) FROM book")])
    out = run(context, question="How many books are there?", db="demo")
    assert out["status"] == "ok" and out["rows"][0][0] > 0
