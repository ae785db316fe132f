"""`macsql ask` end to end: the real langchain-openai client against a local HTTP model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import concert_db

from macsql.cli.main import main
from macsql.core.context import Agent
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT = str(concert_db())
QUESTION = "What is the name of the oldest singer?"


def model_args(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return ["--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k", *extra]


def test_wrong_column_then_fix_through_the_real_client(capsys: pytest.CaptureFixture) -> None:
    replies = [
        "Sub question 1: oldest singer\nSQL\n```sql\nSELECT singer_name FROM singer "
        "ORDER BY Age DESC LIMIT 1\n```\nQuestion Solved.",
        "The column is called Name.\n```sql\nSELECT Name FROM singer ORDER BY Age DESC "
        "LIMIT 1\n```",
    ]
    with ScriptedOpenAIServer(replies) as server:
        code = main(["ask", QUESTION, "--db", CONCERT, "--json", *model_args(server)])
        assert server.requests == 2
        assert server.bodies[0]["model"] == "scripted"
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["sql"] == "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
    assert out["rows"] == [["Oskar Lind"]]
    assert out["attempts"] == 2
    assert out["status"] == "ok" and out["error"] is None
    assert out["selector_used"] is False
    assert out["usage"]["decomposer"]["calls"] == 1
    assert out["usage"]["refiner"]["input_tokens"] > 0


def test_table_output_shows_sql_rows_and_attempts(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(["```sql\nSELECT Name, Age FROM singer WHERE Age > 50\n```"]) as s:
        code = main(["ask", QUESTION, "--db", CONCERT, *model_args(s)])
    text = capsys.readouterr().out
    assert code == 0
    assert "SELECT Name, Age FROM singer WHERE Age > 50" in text
    assert "Oskar Lind" in text and "58" in text
    assert "1 attempt" in text


def test_missing_database_exits_2(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer([]) as server:
        code = main(["ask", QUESTION, "--db", "/no/such/file.sqlite", *model_args(server)])
        assert server.requests == 0
    err = capsys.readouterr().err
    assert code == 2
    assert "database file not found: /no/such/file.sqlite" in err
    assert len(err.strip().splitlines()) == 1


def test_empty_question_exits_2(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer([]) as server:
        code = main(["ask", "  ", "--db", CONCERT, *model_args(server)])
    assert code == 2
    assert "question is empty" in capsys.readouterr().err


def test_no_model_configured_exits_2(capsys: pytest.CaptureFixture) -> None:
    code = main(["ask", QUESTION, "--db", CONCERT])
    err = capsys.readouterr().err
    assert code == 2
    assert "OPENAI_API_KEY" in err and "Traceback" not in err


def test_model_that_returns_prose_exits_1(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(lambda prompt: "The singers are all very talented.") as server:
        code = main(["ask", QUESTION, "--db", CONCERT, "--json", *model_args(server)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["status"] == "failed" and out["sql"] == ""
    assert "held no SQL query" in out["error"]


def test_http_500_exits_1_with_a_clear_message(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(lambda prompt: 500) as server:
        code = main(["ask", QUESTION, "--db", CONCERT, "--json", *model_args(server)])
        assert server.requests >= 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1
    assert out["status"] == "failed"
    assert "model call failed" in out["error"] and "500" in out["error"]
    assert "Traceback" not in captured.err


def test_a_model_failure_reads_plainly_in_the_console(capsys: pytest.CaptureFixture) -> None:
    """No SQL ran, so there is no outcome to show: the status line must not say "(None)"."""
    with ScriptedOpenAIServer(lambda prompt: 500) as server:
        code = main(["ask", QUESTION, "--db", CONCERT, *model_args(server)])
    captured = capsys.readouterr()
    assert code == 1
    assert "status: failed, 0 attempts" in captured.out and "None" not in captured.out
    assert "error: model call failed" in captured.out and "Traceback" not in captured.err


@pytest.mark.slow
def test_console_script_on_the_demo_database(tmp_path: Path) -> None:
    env = {**os.environ, "MACSQL_CACHE_DIR": str(tmp_path)}
    with ScriptedOpenAIServer(["```sql\nSELECT count(*) FROM book\n```"]) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "macsql.cli.main",
                "ask",
                "How many books are there?",
                "--db",
                "demo",
                "--json",
                *model_args(server),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["rows"] == [[40]]
    assert (tmp_path / "demo" / "bookshop.sqlite").is_file()


def test_streaming_server_path_works_too(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(["```sql\nSELECT count(*) FROM singer\n```"]) as server:
        code = main(["ask", QUESTION, "--db", CONCERT, "--stream", *model_args(server)])
        assert server.bodies[0].get("stream") is True
    text = capsys.readouterr().out
    assert code == 0
    assert "[executor] done" in text and "outcome=ok" in text


def test_set_reaches_any_context_field() -> None:
    from macsql.cli.common import UsageError, parse_context_fields

    assert parse_context_fields(
        [
            "num_reviewers=5",
            "approve_sql=true",
            "query_timeout=2.5",
            "refiner_model=openai:gpt-4o",
            "base_url=none",
            "dataset_style=spider",
        ]
    ) == {
        "num_reviewers": 5,
        "approve_sql": True,
        "query_timeout": 2.5,
        "refiner_model": "openai:gpt-4o",
        "base_url": None,
        "dataset_style": "spider",
    }
    for bad in [
        "nope=1",
        "max_try_times=three",
        "dataset_style=wiki",
        "approve_sql=maybe",
        "max_try_times",
    ]:
        with pytest.raises(UsageError):
            parse_context_fields([bad])


def test_set_changes_the_run(capsys: pytest.CaptureFixture) -> None:
    always_wrong = lambda prompt: "```sql\nSELECT nothing FROM singer\n```"  # noqa: E731
    with ScriptedOpenAIServer(always_wrong) as server:
        code = main(
            [
                "ask",
                QUESTION,
                "--db",
                CONCERT,
                "--json",
                "--set",
                "max_try_times=4",
                *model_args(server),
            ]
        )
    assert code == 1
    assert json.loads(capsys.readouterr().out)["attempts"] == 4


def test_stream_shows_the_stages_of_a_pipeline_of_pipelines(
    capsys: pytest.CaptureFixture,
) -> None:
    reply = {
        Agent.DECOMPOSER: "```sql\nSELECT count(*) FROM singer\n```",
        Agent.REVIEWER: 'The query counts the singers.\n{"verdict": "pass", "reason": "matches"}',
    }
    with ScriptedOpenAIServer(reply) as server:
        code = main(
            [
                "ask",
                "How many singers?",
                "--db",
                CONCERT,
                "--stream",
                "--pipeline",
                "macsql+sqlfix",
                *model_args(server),
            ]
        )
    text = capsys.readouterr().out
    assert code == 0
    assert "macsql [executor] done" in text
    assert "sqlfix [reviewer]" in text


def test_plain_output_shows_the_answer_in_words() -> None:
    from io import StringIO

    from rich.console import Console

    from macsql.cli.ask import _print_result
    from macsql.core.results import Result

    def result(**output: object) -> Result:
        return Result.from_run(output, question="q", db="demo", pipeline="macsql")

    buffer = StringIO()
    output = {"sql": "SELECT 1", "status": "ok", "attempts": 1, "answer": "There are 6 singers."}
    _print_result(Console(file=buffer, width=120), result(**output))
    text = buffer.getvalue()
    assert "Answer:" in text and "There are 6 singers." in text
    buffer = StringIO()
    _print_result(Console(file=buffer, width=120), result(**{**output, "answer": ""}))
    assert "Answer:" not in buffer.getvalue()
