"""`macsql serve` and the `--server` clients without a server: what they refuse, what they send,
and how the served graphs differ from the registry's (tests/test_server.py runs the servers)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import random
import socket
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db, spider_eval_args, spider_sample

from macsql.cli.main import main
from macsql.core.context import Context
from macsql.evals.options import EvalOptions
from macsql.evals.results import read_results
from macsql.evals.runner import run_eval
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.serving.client import ServerRuns, context_payload
from macsql.serving.engine import (
    ServeError,
    ServeOptions,
    check_options,
    engine_config,
    is_loopback,
    load_auth,
)
from macsql.serving.errors import NoServerAnswers
from macsql.serving.graphs import ServedGraph, attribute_name, served_graph
from macsql.serving.token_auth import token_matches

ROOT = Path(__file__).resolve().parents[1]
PG = "postgresql://u:p@127.0.0.1:5/macsql"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


# ----------------------------------------------------------------------------- the context


def _random_value(rng: random.Random, current: Any) -> Any:
    if isinstance(current, bool):
        return not current
    if isinstance(current, int):
        return current + rng.randint(1, 50)
    if isinstance(current, float):
        return current + rng.choice([0.5, 1.0, 7.25])
    if isinstance(current, tuple):
        return tuple(rng.sample(["lower", "upper", "abs", "round", "length"], rng.randint(1, 3)))
    return None  # a string or an optional field: left alone (its values are constrained)


def test_a_context_survives_the_trip_to_the_server_as_json() -> None:
    """Any Context, sent as its changed fields in JSON, is the same Context on the other side."""
    rng = random.Random(30)
    names = [f.name for f in fields(Context)]
    for _ in range(200):
        changes: dict[str, Any] = {}
        for name in rng.sample(names, rng.randint(0, 8)):
            value = _random_value(rng, getattr(Context(), name))
            if value is not None:
                changes[name] = value
        if rng.random() < 0.5:
            changes["model"] = rng.choice(["openai:gpt-4o-mini", "openai:scripted"])
            changes["base_url"] = f"http://127.0.0.1:{rng.randint(1000, 9999)}/v1"
        context = Context(**changes)
        payload = json.loads(json.dumps(context_payload(context)))
        assert set(payload) == {n for n, v in changes.items() if v != getattr(Context(), n)}
        assert Context(**payload) == context
    assert context_payload(None) == {}
    assert context_payload(Context()) == {}


# ----------------------------------------------------------------------------- serve


def test_only_loopback_is_served_without_auth() -> None:
    rng = random.Random(7)
    loopback = ["localhost", "::1", "[::1]"] + [
        str(ipaddress.IPv4Address(0x7F000000 + rng.randrange(1, 2**24 - 1))) for _ in range(50)
    ]
    others = ["0.0.0.0", "::", "example.org", "192.168.1.20", "10.0.0.1"] + [
        str(ipaddress.IPv4Address(rng.randrange(0x80000000, 0xDF000000))) for _ in range(50)
    ]
    for host in loopback:
        assert is_loopback(host), host
        check_options(ServeOptions(database_url=PG, host=host))
    for host in others:
        assert not is_loopback(host), host
        with pytest.raises(ServeError, match="no auth"):
            check_options(ServeOptions(database_url=PG, host=host))
        check_options(ServeOptions(database_url=PG, host=host, auth="token"))
        check_options(ServeOptions(database_url=PG, host=host, allow_anonymous=True))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"database_url": "sqlite:///x.db"}, "PostgreSQL URL"),
        ({"workers": 0}, "--workers"),
        ({"port": 70000}, "--port"),
        ({"db_pool": 0}, "at least 1"),
    ],
)
def test_bad_server_settings_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ServeError, match=message):
        check_options(ServeOptions(**{"database_url": PG, **change}))


def test_every_pipeline_is_served_and_an_auth_handler_is_configured_only_when_asked() -> None:
    config = engine_config(None)
    configured = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert list(config["graphs"]) == list(configured) == pipeline_names()
    for name, path in config["graphs"].items():
        file, _, attribute = path.rpartition(":")
        assert Path(file).name == "graphs.py" and attribute == attribute_name(name)
        assert attribute.isidentifier()
    assert "auth" not in config
    assert engine_config("my_auth:auth")["auth"] == {"path": "my_auth:auth"}


def test_a_token_is_needed_for_token_auth_and_a_broken_handler_stops_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MACSQL_SERVER_TOKEN", raising=False)
    with pytest.raises(ServeError, match="MACSQL_SERVER_TOKEN"):
        engine_config("token")
    monkeypatch.setenv("MACSQL_SERVER_TOKEN", "x" * 32)
    assert engine_config("token")["auth"]["path"] == "macsql.serving.token_auth:auth"
    assert load_auth("macsql.serving.token_auth:auth") is not None
    # Aegra would fall back to anonymous access for each of these; `macsql serve` stops.
    not_auth = tmp_path / "not_auth.py"
    not_auth.write_text("auth = object()\n")
    no_handler = tmp_path / "no_handler.py"
    no_handler.write_text("from langgraph_sdk import Auth\nauth = Auth()\n")
    for target, message in [
        (f"{not_auth}:auth", "not a langgraph_sdk.Auth"),
        (f"{no_handler}:auth", "no @auth.authenticate"),
        ("no_such_module_here:auth", "cannot load"),
        (f"{tmp_path / 'missing.py'}:auth", "cannot load"),
    ]:
        with pytest.raises(ServeError, match=message):
            load_auth(target)


def test_the_token_check() -> None:
    rng = random.Random(11)
    for _ in range(200):
        token = "".join(rng.choices("abcdefXYZ0123456789-_", k=rng.randint(8, 40)))
        assert token_matches(f"Bearer {token}", token)
        assert token_matches(f"bearer {token}", token)
        position = rng.randrange(len(token))
        other = token[:position] + ("x" if token[position] != "x" else "y") + token[position + 1 :]
        assert not token_matches(f"Bearer {other}", token)
        assert not token_matches(token, token)  # no scheme
        assert not token_matches(f"Basic {token}", token)
        assert not token_matches(f"Bearer {token}", "")  # no token configured: nobody


def test_serve_needs_a_database_and_says_so(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    for name in ("MACSQL_SERVER_DB_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve"]) == 2
    assert "--database-url" in capsys.readouterr().err
    assert main(["serve", "--database-url", PG, "--host", "0.0.0.0"]) == 2
    assert "no auth" in capsys.readouterr().err
    unreachable = f"postgresql://u:p@127.0.0.1:{_closed_port()}/macsql"
    assert main(["serve", "--database-url", unreachable]) == 2
    err = capsys.readouterr().err
    assert "cannot reach PostgreSQL" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- served graphs


@pytest.mark.parametrize("pipeline", pipeline_names())
def test_a_served_graph_is_the_pipeline_with_its_schema_built_once(pipeline: str) -> None:
    graph = served_graph(pipeline)
    original = get_pipeline(pipeline)
    assert isinstance(graph, ServedGraph)
    assert graph.get_graph().draw_mermaid() == original.get_graph().draw_mermaid()
    assert graph.get_context_jsonschema() == original.get_context_jsonschema()
    # The engine copies the graph per run to attach its checkpointer: still served, and the
    # schema is not rebuilt.
    copy = graph.copy(update={"checkpointer": None})
    assert isinstance(copy, ServedGraph)
    assert copy.get_context_jsonschema() is graph.get_context_jsonschema()


def test_a_served_graph_checkpoints_once_per_run(scripted: Any) -> None:
    """Unlike the registry's graph, which writes a checkpoint after every step."""
    from langgraph.checkpoint.memory import InMemorySaver

    model, context = scripted(
        ["SQL\n```sql\nSELECT count(*) FROM singer\n```\nQuestion Solved."] * 2
    )
    run_input = {"question": "How many singers?", "db": str(concert_db())}
    counts = {}
    for label, graph in (("served", served_graph("macsql")), ("registry", get_pipeline("macsql"))):
        saver = InMemorySaver()
        bound = graph.copy(update={"checkpointer": saver})
        config = {"configurable": {"thread_id": label}}
        out = asyncio.run(bound.ainvoke(run_input, config, context=context))
        assert out["status"] == "ok"
        counts[label] = len(list(saver.list(config)))
        assert bound.get_state(config).values["sql"] == "SELECT count(*) FROM singer"
    assert len(model.prompts) == 2  # one Decomposer call per run
    assert counts["served"] == 1
    assert counts["registry"] > 3


# ----------------------------------------------------------------------------- clients


def test_eval_and_chat_with_no_server_stop_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    args = spider_eval_args(tmp_path / "run", "--server", url, data_dir=spider_sample())
    assert main(args) == 2
    err = capsys.readouterr().err
    assert url in err and "Traceback" not in err
    assert not (tmp_path / "run" / "results.jsonl").exists()
    chat = ["chat", "--server", url, "--db", str(concert_db()), "--no-answer"]
    assert main(chat) == 2
    assert url in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--gold"], ["--traces"], ["--cache", "x.sqlite"]])
def test_eval_options_that_need_the_pipeline_here_are_refused_with_a_server(
    flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = spider_eval_args(tmp_path, "--server", "http://127.0.0.1:9", *flag)
    assert main(args) == 2
    assert f"{flag[0]} runs the pipeline here" in capsys.readouterr().err


class _Flaky:
    """A pipeline whose server is gone for some items: they raise `NoServerAnswers`."""

    def __init__(self, lost: set[str]) -> None:
        self.lost = lost
        self.asked: list[str] = []

    async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
        self.asked.append(payload["question"])
        if payload["question"] in self.lost:
            raise NoServerAnswers("no server answered for 30s")
        sql = _GOLD[payload["question"]]
        return {"sql": sql, "status": "ok", "attempts": 1}


_GOLD = {q["question"]: q["query"] for q in json.loads((spider_sample() / "dev.json").read_text())}


def test_an_item_no_server_ran_gets_no_record_and_resume_runs_it(tmp_path: Path) -> None:
    questions = list(_GOLD)[:8]
    lost = {questions[2], questions[5]}
    options = EvalOptions(
        dataset="spider",
        data_dir=str(spider_sample()),
        limit=8,
        out=str(tmp_path),
        progress=False,
        ves_iterations=0,
        concurrency=2,
    )
    first = asyncio.run(run_eval(options, graph=_Flaky(lost)))
    recorded = read_results(tmp_path / "results.jsonl")
    assert sorted(recorded) == [i for i, q in enumerate(questions) if q not in lost]
    assert all(r["status"] == "ok" for r in recorded.values())
    assert first.summary["n_scored"] == 6
    options.resume = True
    again = _Flaky(set())
    asyncio.run(run_eval(options, graph=again))
    assert sorted(again.asked) == sorted(lost)
    assert sorted(read_results(tmp_path / "results.jsonl")) == list(range(8))


def test_the_client_refuses_no_url() -> None:
    with pytest.raises(ValueError):
        ServerRuns([])
