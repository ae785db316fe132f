"""A newcomer's first hour (issue 14): configuration mistakes are one line and exit 2, errors
name the fix, a closed pipe is quiet, a paused run is not a failed one."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import spider_db
from sqlalchemy.engine import make_url

from macsql.cli.main import main
from macsql.core.context import Context
from macsql.graph.macsql_graph import builder
from macsql.graph.registry import get_pipeline
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT = str(spider_db("concert_singer"))
QUESTION = "What is the name of the oldest singer?"
ROWS_SQL = "```sql\nSELECT * FROM singer\n```"


def _ask(db: str, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str]:
    with ScriptedOpenAIServer([ROWS_SQL]) as server:
        code = main(
            ["ask", QUESTION, "--db", db, "--model", "openai:m", "--base-url", server.base_url,
             "--api-key", "k", *extra]
        )  # fmt: skip
        assert server.requests == 0, "a configuration error must stop before the model"
    return code, capsys.readouterr().err


# A scripted server of an earlier test may report a client that hung up, from its own thread,
# into this test's capture (socketserver's handle_error); that block is not ours.
_SERVER_NOISE = re.compile(
    r"-{40}\nException occurred during processing of request.*?-{40}\n", re.S
)


def _one_clean_line(err: str) -> str:
    lines = _SERVER_NOISE.sub("", err).strip().splitlines()
    assert len(lines) == 1, err
    assert "sqlalche.me" not in err and "[SQL:" not in err and "Traceback" not in err
    assert lines[0].startswith("macsql: error: ")
    return lines[0]


def test_a_file_that_is_no_database_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # A CSV or Parquet file is loaded into DuckDB instead (tests/test_front_door.py).
    notes = tmp_path / "people.dat"
    notes.write_text("name,age\nAda,36\n" * 50)
    code, err = _ask(str(notes), capsys)
    assert code == 2
    assert "file is not a database" in _one_clean_line(err)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # mysql:// itself now means PyMySQL (the `mysql` extra; tests/test_backend_drivers.py)
        ("mysql+mysqldb://u:p@127.0.0.1/shop", "pip install mysqlclient"),
        ("nosuchdriver://u:p@127.0.0.1/shop", "no 'nosuchdriver' database dialect"),
    ],
)
def test_a_missing_or_unknown_driver_names_the_fix(
    url: str, expected: str, capsys: pytest.CaptureFixture
) -> None:
    code, err = _ask(url, capsys)
    assert code == 2
    line = _one_clean_line(err)
    assert expected in line and ":p@" not in line  # the password is never printed


@pytest.mark.postgres
def test_postgres_wrong_password_and_unknown_database(
    pg_admin_url: str, capsys: pytest.CaptureFixture
) -> None:
    url = make_url(pg_admin_url)
    wrong_password = url.set(password="firsthour-wrong").render_as_string(hide_password=False)
    code, err = _ask(wrong_password, capsys)
    assert code == 2
    assert "password authentication failed" in _one_clean_line(err)

    unknown = url.set(database="firsthour_no_such_db").render_as_string(hide_password=False)
    code, err = _ask(unknown, capsys)
    assert code == 2
    assert 'database "firsthour_no_such_db" does not exist' in _one_clean_line(err)


def test_the_graph_reports_an_unreadable_database_in_one_line(tmp_path: Path) -> None:
    """Studio and the Python API get the same one-line reason as the CLI."""
    notes = tmp_path / "people.dat"
    notes.write_text("name,age\n" * 50)
    out = get_pipeline("macsql").invoke({"question": QUESTION, "db": str(notes)})
    assert out["status"] == "failed"
    assert out["error"].endswith("file is not a database")
    assert "\n" not in out["error"] and "sqlalche.me" not in out["error"]
    # A CSV file is a table: the error says how to load it.
    csv = notes.rename(tmp_path / "people.csv")
    out = get_pipeline("macsql").invoke({"question": QUESTION, "db": str(csv)})
    assert out["status"] == "failed" and "macsql.connect" in out["error"]
    assert "\n" not in out["error"]


@pytest.mark.needs_data("spider")
def test_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`macsql ask --json | head -c 400`: the reader leaves early, no traceback."""
    env = {**os.environ, "MACSQL_CACHE_DIR": str(tmp_path)}
    with ScriptedOpenAIServer([ROWS_SQL]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "macsql.cli.main", "ask", QUESTION, "--db", CONCERT, "--json",
             "--model", "openai:m", "--base-url", server.base_url, "--api-key", "k"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the answer is written
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        assert server.requests == 1  # the question really was answered
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 141


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.needs_data("spider")
def test_an_unreachable_model_server_names_the_url_and_the_fix(
    capsys: pytest.CaptureFixture,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code = main(
        ["ask", QUESTION, "--db", CONCERT, "--json", "--model", "openai:m", "--base-url", url,
         "--api-key", "k", "--set", "model_max_retries=0"]
    )  # fmt: skip
    error = capsys.readouterr().out
    assert code == 1
    assert f"tried {url}" in error
    assert "--base-url" in error and "OPENAI_BASE_URL" in error and "--model" in error


@pytest.mark.needs_data("spider")
def test_no_model_names_the_context_fields_in_the_python_api() -> None:
    """Studio and Python callers have no flags: the message names the Context fields."""
    out = get_pipeline("macsql").invoke({"question": QUESTION, "db": CONCERT})
    assert out["status"] == "failed"
    assert "Context field base_url" in out["error"] and "api_key" in out["error"]
    assert "--base-url" not in out["error"]


@pytest.mark.needs_data("spider")
def test_no_model_in_the_cli_names_the_flags(capsys: pytest.CaptureFixture) -> None:
    code = main(["ask", QUESTION, "--db", CONCERT])
    line = _one_clean_line(capsys.readouterr().err)
    assert code == 2
    assert "--base-url" in line and "OPENAI_API_KEY" in line


@pytest.mark.needs_data("spider")
def test_a_run_paused_for_approval_is_not_failed(scripted) -> None:  # type: ignore[no-untyped-def]
    from langgraph.checkpoint.memory import InMemorySaver

    _model, context = scripted([ROWS_SQL], approve_sql=True, dataset_style="spider")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "paused"}}
    paused = graph.invoke({"question": QUESTION, "db": CONCERT}, config, context=context)
    assert "__interrupt__" in paused
    assert paused["status"] == "paused" and paused["error"] is None

    rejected = graph.invoke(_resume(False), config, context=context)
    assert rejected["status"] == "failed"
    assert rejected["error"] == "the SQL was rejected by the reviewer"


def _resume(value: object) -> object:
    from langgraph.types import Command

    return Command(resume=value)


@pytest.mark.needs_data("spider")
def test_every_context_minimum_reaches_the_cli(capsys: pytest.CaptureFixture) -> None:
    code = main(["ask", QUESTION, "--db", CONCERT, "--set", "max_try_times=-1"])
    assert code == 2
    assert "max_try_times must be at least 1" in _one_clean_line(capsys.readouterr().err)
    assert Context().max_try_times == 3


def _r3_with_an_unreadable_persona_reply(prompt: str) -> str:
    if "Choose 3 reviewers" in prompt:
        return "Happy to help! Reviewers are great."  # no JSON: the defaults step in
    if "that a colleague wrote for a user's question" in prompt:
        return "The query is right."
    return "I stand by it.\n```sql\nSELECT Name FROM singer ORDER BY Age DESC LIMIT 1\n```"


@pytest.mark.needs_data("spider")
def test_r3_default_reviewers_show_in_the_plain_output(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(_r3_with_an_unreadable_persona_reply) as server:
        code = main(
            ["ask", QUESTION, "--db", CONCERT, "--pipeline", "r3", "--model", "openai:m",
             "--base-url", server.base_url, "--api-key", "k"]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    detail = "the reply named 0 of 3 reviewers; the rest are defaults"
    assert out.count(detail) == 1  # said once, though both `fallbacks` and the agent's key hold it
    assert f"note: [persona] {detail}" in out


def test_a_fallback_only_in_its_agent_key_is_still_printed() -> None:
    from io import StringIO

    from rich.console import Console

    from macsql.cli.ask import _print_result
    from macsql.core.results import Result

    buffer = StringIO()
    output = {"sql": "SELECT 1", "status": "ok", "fallbacks": [], "selector_fallback": "kept all"}
    result = Result.from_run(output, question="q", db="demo", pipeline="macsql")
    _print_result(Console(file=buffer, width=200), result)
    assert "selector fallback: kept all" in buffer.getvalue()


# --------------------------------------------------------------------------- eval exit codes

SPIDER = spider_db("concert_singer").parents[2]


def _eval(out: Path, server: ScriptedOpenAIServer, *extra: str) -> int:
    return main(
        ["eval", "--dataset", "spider", "--data-dir", str(SPIDER), "--out", str(out),
         "--no-progress", "--processes", "1", "--model", "openai:m", "--base-url",
         server.base_url, "--api-key", "k", "--set", "model_max_retries=0", *extra]
    )  # fmt: skip


@pytest.mark.needs_data("spider")
def test_an_eval_whose_model_calls_all_fail_exits_1_with_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    with ScriptedOpenAIServer(lambda prompt: 500) as server:
        code = _eval(tmp_path / "run", server, "--limit", "4", "--stop-after-failures", "0")
    err = capsys.readouterr().err
    assert code == 1
    line = _one_clean_line(err)
    assert "4 of 4 items got no SQL; most common error (4 items): model call failed" in line
    assert "500" in line
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "**The run failed:** 4 of 4 items got no SQL" in summary


@pytest.mark.needs_data("spider")
def test_an_eval_stops_early_when_model_calls_keep_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    with ScriptedOpenAIServer(lambda prompt: 500) as server:
        code = _eval(
            tmp_path / "run", server, "--limit", "30", "--concurrency", "1",
            "--stop-after-failures", "3",
        )  # fmt: skip
        requests = server.requests
    line = _one_clean_line(capsys.readouterr().err)
    assert code == 1
    # One call per item; only the items already in flight (3 per request slot) finish.
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert 3 <= requests == len(lines) <= 6
    assert "stopped early after " in line and "items in a row whose model call failed" in line
    assert f"{30 - len(lines)} of 30 items not run" in line and "--resume" in line


@pytest.mark.needs_data("spider")
def test_a_healthy_eval_still_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(lambda prompt: ROWS_SQL) as server:
        code = _eval(tmp_path / "run", server, "--limit", "3")
    assert code == 0, capsys.readouterr().err


@pytest.mark.needs_data("spider", "bird")
def test_bird_on_a_spider_folder_names_the_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(
        ["eval", "--dataset", "bird", "--data-dir", str(SPIDER), "--gold", "--limit", "3",
         "--out", str(tmp_path / "run"), "--no-progress"]
    )  # fmt: skip
    line = _one_clean_line(capsys.readouterr().err)
    assert code == 2
    assert "is a Spider folder, not BIRD: use --dataset spider" in line


def test_an_eval_where_every_item_is_skipped_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "spider"
    (data / "database").mkdir(parents=True)
    (data / "dev.json").write_text(
        '[{"db_id": "gone", "question": "How many?", "query": "SELECT 1"}]'
    )
    (data / "tables.json").write_text("[]")
    code = main(
        ["eval", "--dataset", "spider", "--data-dir", str(data), "--gold",
         "--out", str(tmp_path / "run"), "--no-progress"]
    )  # fmt: skip
    line = _one_clean_line(capsys.readouterr().err)
    assert code == 1
    assert "no item could run: all 1 were skipped" in line


@pytest.mark.needs_data("spider")
def test_eval_errors_carry_the_prefix_and_no_stray_quotes(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(
        ["eval", "--dataset", "spider", "--data-dir", str(SPIDER), "--pipeline", "nosuch",
         "--limit", "1", "--out", str(tmp_path / "run"), "--no-progress", "--base-url",
         "http://127.0.0.1:9/v1"]
    )  # fmt: skip
    line = _one_clean_line(capsys.readouterr().err)
    assert code == 2
    assert line.startswith("macsql: error: unknown pipeline 'nosuch'")


def test_processes_default_to_the_cores_up_to_two() -> None:
    from macsql.cli.main import build_parser

    args = build_parser("eval").parse_args(["eval", "--dataset", "spider", "--data-dir", "x"])
    assert args.processes == max(1, min(2, os.cpu_count() or 1))


# --------------------------------------------------------------------------- docs for users

DOCS = Path(__file__).resolve().parents[1] / "docs"
ASKING = (DOCS / "guides" / "asking.md").read_text()
STUDIO = (DOCS / "guides" / "studio.md").read_text()


def test_the_readme_ask_synopsis_matches_the_parser() -> None:
    from macsql.cli.main import build_parser

    block = re.search(r"```\n(macsql ask QUESTION.*?)\n```", ASKING, re.S)
    assert block is not None
    documented = set(re.findall(r"--[a-z][a-z-]*", block.group(1)))
    ask = build_parser("ask")._subparsers._group_actions[0].choices["ask"]  # type: ignore[union-attr]
    actual = {o for a in ask._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    assert documented == actual
    assert "macsql|sqlfix|r3|macsql+sqlfix" in block.group(1)


def test_the_readme_states_the_dataset_style_default() -> None:
    stated = re.search(r"`dataset_style` defaults to `(\w+)`", STUDIO)
    assert stated is not None and stated.group(1) == Context().dataset_style
    assert "design card" not in STUDIO and "not on the card" not in STUDIO


def test_a_parent_with_macsql_output_keys_gets_the_failure_reason() -> None:
    """The documented way (a) to embed: the parent's state derives from MacSqlOutput."""
    from langgraph.graph import START, StateGraph

    from macsql.core.state import MacSqlInput, MacSqlOutput

    class Parent(MacSqlInput, MacSqlOutput):
        pass

    parent = StateGraph(Parent)
    parent.add_node("macsql", get_pipeline("macsql"))
    parent.add_edge(START, "macsql")
    out = parent.compile().invoke({"question": QUESTION, "db": "/no/such.sqlite"})
    assert out["status"] == "failed"
    assert out["error"] == "database file not found: /no/such.sqlite"


def test_studio_shows_a_description_for_every_input_field() -> None:
    from macsql.graph.registry import pipeline_names

    for name in pipeline_names():
        fields = get_pipeline(name).get_input_jsonschema()["properties"]
        assert {"question", "db", "evidence"} <= set(fields), name
        for field, schema in fields.items():
            assert schema.get("description"), f"{name}.{field} has no description"


def test_ci_deletes_the_postgres_cluster_it_starts() -> None:
    """`.ci/run` arms the clean-up before it starts the server, on a cluster of its own."""
    script = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    trap = script.index("trap 'bash scripts/ci_postgres.sh destroy")
    start = script.index("\nbash scripts/ci_postgres.sh\n")
    base = script.index('export MACSQL_PG_BASE="$(mktemp -d)')
    assert base < trap < start
