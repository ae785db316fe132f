"""Inputs that should be text and are not (a parent graph's state mapped in as it is, a Python
caller's None): a failed run or a TypeError that names the input, never an AttributeError from
deep inside a node."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_type_hints

import pytest
from conftest import concert_db

import macsql
from macsql.core.context import Context
from macsql.core.state import MacSqlInput, SqlFixInput
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


def _text_inputs(pipeline: str) -> list[str]:
    schema = SqlFixInput if pipeline == "sqlfix" else MacSqlInput
    return [key for key, kind in get_type_hints(schema).items() if kind is str]


# Every text key of every pipeline's input schema, and the record list, each given a wrong type.
WRONG_TYPES = [
    (pipeline, key, value, f"the input {key!r} must be text, not {type(value).__name__}")
    for pipeline in pipeline_names()
    for key in _text_inputs(pipeline)
    if key not in ("question", "evidence", "db")  # above
    for value in (5, ["x"])
] + [
    (pipeline, "turns", value, expected)
    for pipeline in pipeline_names()
    for value, expected in [
        ("abc", "the input 'turns' must be a list of objects, not str"),
        ([1], "the input 'turns' must hold objects, not int"),
    ]
]


@pytest.mark.parametrize(("pipeline", "key", "value", "expected"), WRONG_TYPES)
def test_every_input_of_the_wrong_type_fails_the_run_naming_it(
    pipeline: str, key: str, value: Any, expected: str
) -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    payload = {"question": "How many singers?", "db": str(concert_db()), key: value}
    with registered_chat_model("scripted-input-types", model) as name:
        out = get_pipeline(pipeline).invoke(payload, context=Context(model=name))
    assert out["status"] == "failed" and out["error"] == expected
    assert model.prompts == []


# Questions with no letter or digit in any script, cut from punctuation, symbols and spaces.
WORDLESS = ["-", "?", "...", " ¿? ", "—", "!!", "* * *", "()", "🤔", "\u3002"]


@pytest.mark.parametrize("question", WORDLESS)
def test_a_question_with_no_words_fails_before_any_model_call(question: str) -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    with registered_chat_model("scripted-input-types", model) as name:
        out = get_pipeline("macsql").invoke(
            {"question": question, "db": str(concert_db())}, context=Context(model=name)
        )
    assert out["status"] == "failed" and out["error"].endswith("has no words")
    assert model.prompts == []


@pytest.mark.parametrize("question", ["几个?", "Wie viele?", "42", "ß", "كم؟"])
def test_a_question_of_one_word_in_any_script_is_asked(question: str) -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    with registered_chat_model("scripted-input-types", model) as name:
        out = get_pipeline("macsql").invoke(
            {"question": question, "db": str(concert_db())}, context=Context(model=name)
        )
    assert out["status"] == "ok" and out["rows"] == [[6]]


def test_a_wordless_follow_up_is_not_sent_to_the_rewriter() -> None:
    model = ScriptedChatModel(responder=lambda _prompt: SQL)
    earlier = [{"role": "user", "content": "How many singers?"}, {"role": "ai", "content": SQL}]
    payload = {"messages": [*earlier, {"role": "user", "content": "??"}], "db": str(concert_db())}
    with registered_chat_model("scripted-input-types", model) as name:
        out = get_pipeline("macsql").invoke(payload, context=Context(model=name))
    assert out["status"] == "failed" and out["error"] == "the question '??' has no words"
    assert model.prompts == []
