"""Models over the real langchain-openai client: per-agent usage, the LLM cache, retries, timeouts.

Every test talks HTTP to `ScriptedOpenAIServer` on 127.0.0.1, which returns OpenAI-style `usage`
(prompt tokens = len(prompt) // 4, completion tokens = len(reply) // 4) and counts requests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db
from langchain_core.globals import get_llm_cache, set_llm_cache

from macsql.cli.main import main
from macsql.core.context import Agent, Context
from macsql.graph.macsql_graph import graph
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT_DB = concert_db()
QUESTION = "How many singers do we have?"
PAYLOAD = {"question": QUESTION, "db": str(CONCERT_DB)}
FIRST_SQL = "SELECT count(*) FROM singer WHERE singer_nme IS NOT NULL"
SECOND_SQL = "SELECT count(*) FROM singers"
FIXED_SQL = "SELECT count(*) FROM singer"


def _tokens(text: str) -> int:
    """The scripted server's token count."""
    return max(1, len(text) // 4)


class Script:
    """Decomposer → wrong column; Refiner → wrong table; Refiner → fixed. Logs each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []  # (agent, prompt, reply)
        self._refines = 0

    def by_agent(self) -> dict[str, Callable[[str], str]]:
        """The responders, one per agent, for the scripted server."""
        return {Agent.DECOMPOSER: self._decompose, Agent.REFINER: self._refine}

    def _decompose(self, prompt: str) -> str:
        return self._log(Agent.DECOMPOSER, prompt, f"```sql\n{FIRST_SQL}\n```\nQuestion Solved.")

    def _refine(self, prompt: str) -> str:
        self._refines += 1
        sql = SECOND_SQL if self._refines == 1 else FIXED_SQL
        return self._log(
            Agent.REFINER, prompt, f"Repair number {self._refines}.\n```sql\n{sql}\n```"
        )

    def _log(self, agent: Agent, prompt: str, reply: str) -> str:
        self.calls.append((agent.value, prompt, reply))
        return reply

    def expected_tokens(self) -> dict[str, dict[str, int]]:
        expected: dict[str, dict[str, int]] = {}
        for agent, prompt, reply in self.calls:
            entry = expected.setdefault(agent, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
            entry["calls"] += 1
            entry["input_tokens"] += _tokens(prompt)
            entry["output_tokens"] += _tokens(reply)
        return expected


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "macsql-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def no_llm_cache() -> Iterator[None]:
    """Whatever a test turns on, the global langchain cache is off again afterwards."""
    set_llm_cache(None)
    yield
    set_llm_cache(None)


def _fixed_reply(_prompt: str) -> str:
    return f"```sql\n{FIXED_SQL}\n```"


def _context(server: ScriptedOpenAIServer, **changes: Any) -> Context:
    return Context(
        model="openai:scripted",
        base_url=server.base_url,
        api_key="test-key",
        dataset_style="spider",
        **changes,
    )


def _usage_without_latency(usage: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {agent: {k: v for k, v in e.items() if k != "latency_s"} for agent, e in usage.items()}


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "token-streaming"])
def test_per_agent_usage_is_summed_over_the_refine_loop(
    streaming: bool, no_llm_cache: None
) -> None:
    script = Script()
    with ScriptedOpenAIServer(script.by_agent(), delay=0.05) as server:
        context = _context(server)
        if streaming:  # the model streams its tokens (stream_mode "messages")
            result: dict[str, Any] = {}
            for mode, chunk in graph.stream(
                PAYLOAD, context=context, stream_mode=["messages", "values"]
            ):
                if mode == "values":
                    result = chunk
        else:
            result = graph.invoke(PAYLOAD, context=context)
        assert [bool(b.get("stream")) for b in server.bodies] == [streaming] * 3

    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["attempts"] == 3
    usage = result["usage"]
    # Tokens from the server's `usage`, via the models' usage_metadata, summed per agent.
    assert _usage_without_latency(usage) == script.expected_tokens()
    assert usage["refiner"]["calls"] == 2
    assert usage["decomposer"]["input_tokens"] > 100
    # Latency covers each HTTP round trip (the server waits 0.05 s per request).
    assert 0.05 <= usage["decomposer"]["latency_s"] < 5
    assert 0.10 <= usage["refiner"]["latency_s"] < 10


def test_each_agent_uses_its_own_model_with_a_default_for_all(no_llm_cache: None) -> None:
    script = Script()
    with ScriptedOpenAIServer(script.by_agent()) as server:
        result = graph.invoke(
            PAYLOAD, context=_context(server, refiner_model="openai:scripted-refiner")
        )
        models = [
            (agent, body["model"])
            for (agent, _, _), body in zip(script.calls, server.bodies, strict=True)
        ]
    assert result["status"] == "ok"
    assert models == [
        ("decomposer", "scripted"),
        ("refiner", "scripted-refiner"),
        ("refiner", "scripted-refiner"),
    ]


# --------------------------------------------------------------------------- cache


def _ask(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return [
        "ask",
        QUESTION,
        "--db",
        str(CONCERT_DB),
        "--base-url",
        server.base_url,
        "--api-key",
        "test-key",
        "--model",
        "openai:scripted",
        "--dataset-style",
        "spider",
        *extra,
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_cache_second_identical_ask_makes_no_model_request(
    stream: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_llm_cache: None
) -> None:
    cache_file = tmp_path / "llm-cache.sqlite"
    flags = ["--cache", str(cache_file), "--json", *(["--stream"] if stream else [])]
    with ScriptedOpenAIServer(Script().by_agent()) as server:
        assert main(_ask(server, *flags)) == 0
        first = json.loads(capsys.readouterr().out)
        assert server.requests == 3
        assert cache_file.is_file()

        assert main(_ask(server, *flags)) == 0
        second = json.loads(capsys.readouterr().out)
        assert server.requests == 3, "the second run called the model"

    assert first["sql"] == FIXED_SQL
    assert {k: v for k, v in second.items() if k != "usage"} == {
        k: v for k, v in first.items() if k != "usage"
    }
    assert _usage_without_latency(second["usage"]) == _usage_without_latency(first["usage"])


def test_without_cache_flag_a_second_run_calls_the_model_again(
    capsys: pytest.CaptureFixture[str], no_llm_cache: None
) -> None:
    with ScriptedOpenAIServer(_fixed_reply) as server:
        assert main(_ask(server, "--json")) == 0
        assert main(_ask(server, "--json")) == 0
        assert server.requests == 2  # the Decomposer, once per run
    assert get_llm_cache() is None


# --------------------------------------------------------------------------- retries, timeouts


def test_a_server_error_is_retried_with_backoff(no_llm_cache: None) -> None:
    replies: list[Any] = [500, _fixed_reply("")]
    with ScriptedOpenAIServer(replies) as server:
        result = graph.invoke(PAYLOAD, context=_context(server, model_max_retries=1))
        assert server.requests == 2
    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["usage"]["decomposer"]["calls"] == 1  # one logical call, retried inside


def test_a_rate_limit_is_retried(no_llm_cache: None) -> None:
    with ScriptedOpenAIServer([429, _fixed_reply("")]) as server:
        result = graph.invoke(PAYLOAD, context=_context(server, model_max_retries=1))
        assert server.requests == 2
    assert result["status"] == "ok"


def test_persistent_server_errors_fail_clearly(no_llm_cache: None) -> None:
    with ScriptedOpenAIServer(lambda _p: 500) as server:
        result = graph.invoke(PAYLOAD, context=_context(server, model_max_retries=1))
        assert server.requests == 2  # the first try and one retry
    assert result["status"] == "failed"
    assert result["sql"] == ""
    assert "model call failed" in result["error"]
    assert "500" in result["error"]
    assert result["usage"]["decomposer"]["calls"] == 1


def test_ask_exits_1_without_traceback_when_the_model_server_keeps_failing(
    capsys: pytest.CaptureFixture[str], no_llm_cache: None
) -> None:
    with ScriptedOpenAIServer(lambda _p: 503) as server:
        code = main(_ask(server, "--json"))
        assert server.requests == 1 + Context().model_max_retries
    captured = capsys.readouterr()
    assert code == 1
    output = json.loads(captured.out)
    assert output["status"] == "failed"
    assert "503" in output["error"]
    assert "Traceback" not in captured.err


def test_a_slow_model_call_times_out_with_a_clear_error(no_llm_cache: None) -> None:
    with ScriptedOpenAIServer(_fixed_reply, delay=3.0) as server:
        started = time.monotonic()
        result = graph.invoke(
            PAYLOAD, context=_context(server, model_timeout=0.5, model_max_retries=0)
        )
        elapsed = time.monotonic() - started
    assert elapsed < 2.5, "the per-call timeout was not applied"
    assert result["status"] == "failed"
    assert "timed out" in result["error"].lower() or "timeout" in result["error"].lower()


# --------------------------------------------------------------------------- the cache class


def test_chat_reply_cache_revives_replies_silently_and_nothing_else(tmp_path: Path) -> None:
    import warnings

    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration
    from langchain_openai import ChatOpenAI

    from macsql.llm.cache import sqlite_llm_cache

    cache = sqlite_llm_cache(tmp_path / "nested" / "cache.sqlite")
    reply = ChatGeneration(message=AIMessage("```sql\nSELECT 1\n```"))
    cache.update("prompt", "llm", [reply])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning on a hit fails the test
        (hit,) = cache.lookup("prompt", "llm") or []
    assert hit.message.content == "```sql\nSELECT 1\n```"
    assert cache.lookup("other prompt", "llm") is None

    # A tampered entry that would construct a client pointing elsewhere is a miss.
    rogue = ChatOpenAI(model="x", api_key="k", base_url="http://198.51.100.1/v1")
    cache.update("rogue", "llm", [rogue])  # type: ignore[list-item]
    assert cache.lookup("rogue", "llm") is None
