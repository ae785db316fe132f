"""Inputs that should be text and are not (a parent graph's state mapped in as it is, a Python
caller's None): a failed run or a TypeError that names the input, never an AttributeError from
deep inside a node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db

import macsql
from macsql.core.context import Context
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel

SQL = "```sql\nSELECT count(*) FROM singer\n```"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("pipeline", pipeline_names())
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"question": 42}, "the input 'question' must be text, not int"),
        ({"question": ["How many?"], "turns": [{"question": "x"}]}, "'question' must be text"),
        ({"evidence": 5}, "the input 'evidence' must be text, not int"),
        ({"db": 5}, "the input 'db' must be text, not int"),
    ],
)
def test_a_graph_input_that_is_not_text_fails_the_run(
    pipeline: str, change: dict[str, Any], expected: str
) -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    payload = {"question": "How many singers?", "db": str(concert_db()), **change}
    with registered_chat_model("scripted-input-types", model) as name:
        out = get_pipeline(pipeline).invoke(payload, context=Context(model=name))
    assert out["status"] == "failed" and expected in out["error"]
    assert model.prompts == []


@pytest.mark.parametrize("argument", ["question", "evidence"])
def test_the_api_names_an_argument_that_is_not_a_str(argument: str) -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    arguments: dict[str, Any] = {"question": "How many singers?", argument: None}
    with pytest.raises(TypeError, match=f"^{argument} must be a str, not NoneType$"):
        macsql.ask(arguments.pop("question"), str(concert_db()), model=model, **arguments)
