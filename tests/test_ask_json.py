"""`macsql ask --json` has one shape: every key of `macsql.core.results.Result`, always, with
empty or null values where a key does not apply, whichever pipeline ran and however it ended."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from conftest import concert_db

from macsql.cli.main import main
from macsql.core.results import Result, result_json_schema
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT = str(concert_db())
SCHEMA = result_json_schema()
KEYS = set(SCHEMA["required"])


def _ask(
    capsys: pytest.CaptureFixture, server: ScriptedOpenAIServer, *extra: str
) -> tuple[int, dict[str, Any]]:
    args = ["ask", "How many singers?", "--db", CONCERT, "--json", *extra]
    args += ["--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k"]
    code = main(args)
    return code, json.loads(capsys.readouterr().out)


def test_the_schema_requires_every_key() -> None:
    assert set(Result.model_fields) == KEYS
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize("name", pipeline_names())
def test_every_output_key_of_every_pipeline_has_its_place(name: str) -> None:
    keys = set(get_pipeline(name).builder.output_schema.__annotations__)
    assert keys <= KEYS, f"{name} outputs keys the --json schema lacks: {keys - KEYS}"


def test_a_run_without_sql_keeps_every_key(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(lambda _prompt: "I cannot tell.") as server:
        code, out = _ask(capsys, server, "--max-tries", "1")
    assert code == 1
    assert set(out) == KEYS
    assert out["status"] == "failed" and out["sql"] == ""
    assert out["rows"] == [] and out["columns"] == [] and out["truncated"] is False
    assert out["outcome"] == "not_run" and out["pending"] == [] and out["traces"] is None
    Result.model_validate(out)


def test_a_successful_run_has_the_same_keys(capsys: pytest.CaptureFixture) -> None:
    with ScriptedOpenAIServer(["```sql\nSELECT count(*) FROM singer\n```"]) as server:
        code, out = _ask(capsys, server, "--pipeline", "r3", "--set", "max_review_turns=0")
    assert code == 0, out
    assert set(out) == KEYS
    assert out["rows"] == [[6]] and out["pipeline"] == "r3"
    assert out["original_sql"] is None  # another pipeline's key, null here
    Result.model_validate(out)


def _random_output(rng: random.Random) -> dict[str, Any]:
    """Some of a graph's output keys, with values of their types, or None."""
    samples: dict[str, Any] = {
        "sql": "SELECT 1",
        "status": rng.choice(["ok", "failed", "paused", None]),
        "outcome": "ok",
        "error": "boom",
        "columns": ["a"],
        "rows": [[1]],
        "truncated": True,
        "attempts": 2,
        "selector_used": True,
        "selector_fallback": "unreadable",
        "usage": {"decomposer": {"calls": 1.0}},
        "fallbacks": [{"agent": "selector", "kind": "no_sql", "detail": "d"}],
        "linking": {"route": "full"},
        "standalone_question": "q?",
        "answer": "six",
        "review": {"verdict": "pass"},
        "repaired": False,
        "consensus": True,
        "personas": ["dba"],
        "schema_text": "internal keys are dropped",
    }
    return {
        k: (v if rng.random() < 0.8 else None) for k, v in samples.items() if rng.random() < 0.5
    }


def test_any_subset_of_output_keys_gives_every_key() -> None:
    rng = random.Random(4)
    for _ in range(300):
        output = _random_output(rng)
        pending = [{"sql": "SELECT 2", "attempt": 1}] if rng.random() < 0.3 else []
        result = Result.from_run(output, question="q", db="d", pipeline="p", pending=pending)
        data = json.loads(json.dumps(result.to_dict()))
        assert set(data) == KEYS
        given = output.get("status")
        expected = "paused" if pending else given if given in ("ok", "failed") else "failed"
        assert data["status"] == expected
        Result.model_validate(data)
