"""`macsql ask --json --traces` and the trace recorder: every agent call, as the server received
it, in order, with what followed; nothing is recorded outside a recording block."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import spider_db, wrong_then_fixed

from macsql.cli.main import main
from macsql.core.context import Agent, Context
from macsql.llm.agent_calls import settings_for
from macsql.llm.calls import call_model
from macsql.llm.traces import recording_traces
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT = str(spider_db("concert_singer"))
QUESTION = "What is the name of the oldest singer?"
WRONG = "SELECT singer_name FROM singer ORDER BY Age DESC LIMIT 1"
FIXED = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
SECRET = "sk-test-secret-0123456789"


def _ask(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return [
        "ask",
        QUESTION,
        "--db",
        CONCERT,
        "--dataset-style",
        "spider",
        "--model",
        "openai:scripted",
        "--base-url",
        server.base_url,
        "--api-key",
        SECRET,
        *extra,
    ]


def _sent(body: dict) -> list[dict]:
    return [{"role": m["role"], "content": m["content"]} for m in body["messages"]]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.needs_data("spider")
def test_ask_traces_are_the_calls_as_the_server_received_them(
    capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    with ScriptedOpenAIServer(wrong_then_fixed(WRONG, FIXED)) as server:
        extra = ["--json", "--traces", *(["--stream"] if stream else [])]
        code = main(_ask(server, *extra))
        bodies = list(server.bodies)
    printed = capsys.readouterr().out
    out = json.loads(printed.strip().splitlines()[-1])
    assert code == 0 and out["sql"] == FIXED
    calls = out["traces"]
    assert [c["agent"] for c in calls] == ["decomposer", "refiner"]
    for call, body in zip(calls, bodies, strict=True):
        assert [{"role": m["role"], "content": m["content"]} for m in call["messages"]] == _sent(
            body
        )
        assert call["model"] == "openai:scripted" and call["error"] is None
        assert call["reasoning"] is None
        assert call["usage"]["calls"] == 1 and call["usage"]["input_tokens"] > 0
    assert calls[0]["messages"][0]["content"].startswith("You are the Decomposer")
    assert calls[0]["reply"] == f"```sql\n{WRONG}\n```\nQuestion Solved."
    # What followed each call: the wrong SQL failed on an unknown column, the repair ran.
    assert calls[0]["execution"]["sql"] == WRONG
    assert calls[0]["execution"]["outcome"] == "unknown_table_or_column"
    assert calls[1]["execution"] == {
        "sql": FIXED,
        "outcome": "ok",
        "error": None,
        "error_class": None,
        "row_count": 1,
    }
    assert out["usage"]["refiner"]["input_tokens"] == calls[1]["usage"]["input_tokens"]
    assert SECRET not in printed  # a trace never holds the API key


@pytest.mark.needs_data("spider")
def test_ask_without_traces_has_none(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer(wrong_then_fixed(WRONG, FIXED)) as server:
        assert main(_ask(server, "--json")) == 0
    assert json.loads(capsys.readouterr().out)["traces"] is None


def test_traces_without_json_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([]) as server:
        assert main(_ask(server, "--traces")) == 2
        assert server.requests == 0
    assert "--traces goes with --json" in capsys.readouterr().err


def test_recorders_in_threads_keep_their_own_calls() -> None:
    """Each eval item records in its own context: concurrent recordings never mix."""
    with ScriptedOpenAIServer(lambda prompt: f"reply to {prompt}") as server:
        context = Context(model="openai:scripted", base_url=server.base_url, api_key=SECRET)
        settings = settings_for(context, Agent.DECOMPOSER)

        def item(n: int) -> list[str]:
            with recording_traces() as trace:
                for turn in range(3):
                    call_model(settings, "decomposer", f"item {n} turn {turn}")
            return [c["messages"][0]["content"] for c in trace.calls]

        with ThreadPoolExecutor(4) as pool:
            recorded = list(pool.map(item, range(8)))
    assert recorded == [[f"item {n} turn {t}" for t in range(3)] for n in range(8)]
