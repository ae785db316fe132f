"""Progress events (`stream_mode="custom"`) from every agent, and `macsql ask --stream`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import concert_db

from macsql.cli.main import main
from macsql.core.context import Agent, Context
from macsql.graph.macsql_graph import graph
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel, ScriptedOpenAIServer

CONCERT_DB = concert_db()
WIDE_TABLES = ("customer", "product", "orders", "warehouse")
COLUMNS_PER_TABLE = 12  # 4 x 12 = 48 columns, 12 per table: MAC-SQL runs the Selector

WRONG_SQL = "SELECT name FROM customer WHERE customer_nme = 'x'"
FIXED_SQL = "SELECT name FROM customer ORDER BY customer_id"
SELECTION = {
    "customer": ["name", "city"],
    "orders": "keep_all",
    "product": ["label"],
    "warehouse": "drop_all",
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def wide_db(tmp_path: Path) -> Path:
    """A schema wide enough for the Selector, with a few rows."""
    path = tmp_path / "wide.sqlite"
    with sqlite3.connect(path) as conn:
        for table in WIDE_TABLES:
            extra = [f"attr_{i} TEXT" for i in range(COLUMNS_PER_TABLE - 4)]
            first = {"customer": "name", "product": "label"}.get(table, "code")
            ref = "REFERENCES customer(customer_id)" if table == "orders" else ""
            conn.execute(
                f"CREATE TABLE {table} ({table}_id INTEGER PRIMARY KEY, {first} TEXT, "
                f"city TEXT, owner_id INTEGER {ref}, {', '.join(extra)})"
            )
        conn.executemany(
            "INSERT INTO customer (customer_id, name, city) VALUES (?, ?, ?)",
            [(1, "Ada", "Oslo"), (2, "Bo", "Lima"), (3, "Cy", "Pune")],
        )
    conn.close()
    return path


_REPLIES = {
    Agent.SELECTOR: "```json\n" + json.dumps(SELECTION) + "\n```",
    Agent.DECOMPOSER: f"Sub question 1: the names\nSQL\n```sql\n{WRONG_SQL}\n```\nQuestion Solved.",
    Agent.REFINER: f"customer_nme does not exist.\n```sql\n{FIXED_SQL}\n```",
}


@pytest.fixture
def scripted() -> Iterator[str]:
    with registered_chat_model("scripted-streaming-test", ScriptedChatModel(responder=_REPLIES)):
        yield "scripted-streaming-test"


def test_custom_stream_reports_every_agent(wide_db: Path, scripted: str) -> None:
    events = list(
        graph.stream(
            {"question": "List the customers' names.", "db": str(wide_db)},
            context=Context(model=scripted, dataset_style="spider"),
            stream_mode="custom",
        )
    )
    assert all({"agent", "phase"} <= set(e) for e in events)
    steps = [(e["agent"], e["phase"]) for e in events]
    assert steps == [
        ("load_schema", "start"),
        ("load_schema", "done"),
        ("link_schema", "start"),
        ("link_schema", "done"),
        ("selector", "start"),
        ("selector", "done"),
        ("decomposer", "start"),
        ("decomposer", "done"),
        ("executor", "start"),
        ("executor", "done"),
        ("refiner", "start"),
        ("refiner", "done"),
        ("executor", "start"),
        ("executor", "done"),
    ]
    by_step = {}
    for event in events:
        by_step.setdefault((event["agent"], event["phase"]), []).append(event)

    assert by_step["load_schema", "done"][0]["columns"] == len(WIDE_TABLES) * COLUMNS_PER_TABLE
    assert by_step["selector", "start"][0]["tables"] == len(WIDE_TABLES)
    # The selected tables, in schema (alphabetical) order, without the dropped one.
    assert by_step["selector", "done"][0]["selected_tables"] == ["customer", "orders", "product"]
    assert by_step["decomposer", "done"][0]["sql"] == WRONG_SQL

    starts = by_step["executor", "start"]
    dones = by_step["executor", "done"]
    assert [(e["attempt"], e["sql"]) for e in starts] == [(1, WRONG_SQL), (2, FIXED_SQL)]
    assert [(e["attempt"], e["outcome"]) for e in dones] == [
        (1, "unknown_table_or_column"),
        (2, "ok"),
    ]
    assert "customer_nme" in dones[0]["error"]
    assert dones[1]["row_count"] == 3

    (refine_start,) = by_step["refiner", "start"]
    (refine_done,) = by_step["refiner", "done"]
    assert refine_start["attempt"] == 1
    assert refine_start["outcome"] == "unknown_table_or_column"
    assert refine_done["sql"] == FIXED_SQL


def test_selector_fallback_event_names_the_tables_kept(wide_db: Path) -> None:
    model = ScriptedChatModel(
        responder={
            Agent.SELECTOR: "I cannot decide.",
            Agent.DECOMPOSER: f"```sql\n{FIXED_SQL}\n```",
            Agent.REFINER: f"```sql\n{FIXED_SQL}\n```",
        }
    )
    with registered_chat_model("scripted-fallback-test", model):
        events = list(
            graph.stream(
                {"question": "List the customers' names.", "db": str(wide_db)},
                context=Context(model="scripted-fallback-test", dataset_style="spider"),
                stream_mode="custom",
            )
        )
    (fallback,) = [e for e in events if e["agent"] == "selector" and e["phase"] == "fallback"]
    assert "holds no table map" in fallback["reason"]
    assert fallback["selected_tables"] == sorted(WIDE_TABLES)


_SPIDER_REPLIES = {
    Agent.DECOMPOSER: "Count the singers.\n```sql\nSELECT count(*) FROM singer WHERE nme = 1\n```",
    Agent.REFINER: "Fixed the column name.\n```sql\nSELECT count(*) FROM singer\n```",
}


def _ask_args(url: str, *extra: str) -> list[str]:
    return [
        "ask",
        "How many singers do we have?",
        "--db",
        str(CONCERT_DB),
        "--base-url",
        url,
        "--api-key",
        "test-key",
        "--model",
        "openai:scripted",
        "--dataset-style",
        "spider",
        *extra,
    ]


def test_ask_stream_prints_events_and_model_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer(_SPIDER_REPLIES) as server:
        code = main(_ask_args(server.base_url, "--stream"))
        bodies = list(server.bodies)
    out = capsys.readouterr().out
    assert code == 0
    # The graph asked the model to stream, and its tokens were printed as they came.
    assert [b.get("stream") for b in bodies] == [True, True]
    lines = out.splitlines()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    tokens = line_of("Count the singers.")
    assert lines[tokens + 2] == "SELECT count(*) FROM singer WHERE nme = 1"
    decomposer_start = line_of("[decomposer] start")
    # The SQL was in the streamed reply: no event prints it again.
    first_try = line_of("[executor] start: attempt=1")
    assert "sql=" not in lines[first_try] and "sql=" not in lines[line_of("[decomposer] done")]
    assert out.count("SELECT count(*) FROM singer WHERE nme = 1") == 1
    failed = line_of("[executor] done: attempt=1, outcome=unknown_table_or_column")
    refine = line_of("[refiner] start: attempt=1")
    refined_tokens = line_of("Fixed the column name.")
    second_ok = line_of("[executor] done: attempt=2, outcome=ok")
    result = line_of("status: ok")
    assert decomposer_start < tokens < first_try < failed < refine < refined_tokens
    assert refined_tokens < second_ok < result


def test_ask_stream_with_json_keeps_stdout_one_json_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ScriptedOpenAIServer(_SPIDER_REPLIES) as server:
        code = main(_ask_args(server.base_url, "--stream", "--json"))
    captured = capsys.readouterr()
    assert code == 0
    output = json.loads(captured.out)
    assert output["sql"] == "SELECT count(*) FROM singer"
    assert output["rows"] == [[6]]
    assert "[executor] done: attempt=2, outcome=ok" in captured.err


@pytest.mark.slow
def test_ask_stream_prints_live_before_the_run_ends() -> None:
    """In a real process with a pipe: progress arrives while a slow model call is pending."""

    def slow_refiner(_prompt: str) -> str:
        time.sleep(2.0)
        return _SPIDER_REPLIES[Agent.REFINER]

    with ScriptedOpenAIServer({**_SPIDER_REPLIES, Agent.REFINER: slow_refiner}) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "macsql.cli.main", *_ask_args(server.base_url, "--stream")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            seen_while_running = None
            for line in proc.stdout:
                if line.startswith("[refiner] start"):
                    seen_while_running = proc.poll() is None
                    break
            rest, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert seen_while_running is True, "progress was not printed before the refiner answered"
    assert proc.returncode == 0, err
    assert "[executor] done: attempt=2, outcome=ok" in rest
