"""Answers to an approval pause in the forms review clients send them (a yes/no word, a flag,
Agent Inbox's responses, LangChain's human-in-the-loop decisions): each runs, edits or rejects
the SQL as it says, and an answer that cannot be read is asked again, never guessed."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import macsql
from macsql.core.context import Context
from macsql.graph.approvals import waiting_approvals
from macsql.graph.registry import get_builder
from macsql.llm.models import registered_chat_model
from macsql.nodes.common.approval import read_decision
from macsql.testing.scripted import ScriptedChatModel

SHOWN = "SELECT count(*) FROM singer"
EDIT = "SELECT count(*) FROM concert"
RUN, REJECT, ASK_AGAIN = "run", "reject", "ask again"


def _inbox(kind: str, args: Any = None) -> list[dict[str, Any]]:
    return [{"type": kind, "args": args}]


def _hitl(decision: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": [decision]}


ANSWERS: list[tuple[Any, str]] = [
    (True, RUN),
    (False, REJECT),
    ("", RUN),
    (EDIT, EDIT),
    (f"  {EDIT}\n", EDIT),
    ({"sql": EDIT}, EDIT),
    ({"approved": True, "sql": EDIT}, EDIT),
    ({"approved": False, "sql": EDIT}, REJECT),
    ({"approved": True}, RUN),
    ({"approved": False}, REJECT),
    ({"approve": False}, REJECT),
    ({"reject": True}, REJECT),
    ({"type": "accept", "args": None}, RUN),
    ({"type": "ignore", "args": None}, REJECT),
    (_inbox("accept"), RUN),
    (_inbox("ignore"), REJECT),
    (_inbox("edit", {"action": "approve_sql", "args": {"sql": EDIT}}), EDIT),
    (_inbox("edit", {"sql": EDIT}), EDIT),
    (_inbox("edit", EDIT), EDIT),
    (_inbox("response", "use the concert table"), ASK_AGAIN),
    (_inbox("edit", {"action": "approve_sql", "args": {}}), ASK_AGAIN),
    (_hitl({"type": "approve"}), RUN),
    (_hitl({"type": "reject", "message": "no"}), REJECT),
    (
        _hitl({"type": "edit", "edited_action": {"name": "approve_sql", "args": {"sql": EDIT}}}),
        EDIT,
    ),
    ({"foo": 1}, ASK_AGAIN),
    ([], ASK_AGAIN),
    ([True, False], ASK_AGAIN),
    (1, ASK_AGAIN),
    (0.0, ASK_AGAIN),
]
# Every casing and trailing stop of the words people type.
ANSWERS += [
    (form, verdict)
    for words, verdict in [
        (("yes", "y", "ok", "approve", "accept"), RUN),
        (("no", "n", "reject"), REJECT),
    ]
    for word in words
    for form in (word, word.upper(), word.capitalize() + ".", f" {word}! ")
]


@pytest.mark.parametrize(("answer", "expected"), ANSWERS)
def test_an_answer_is_read_as_what_it_says(answer: Any, expected: str) -> None:
    decision = read_decision(answer, SHOWN)
    if expected == ASK_AGAIN:
        assert decision.sql is None and decision.problem and "not understood" in decision.problem
        return
    assert decision.problem is None
    assert decision.sql == {RUN: SHOWN, REJECT: None}.get(expected, expected)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def model_name() -> Any:
    model = ScriptedChatModel(responder=lambda _prompt: f"```sql\n{SHOWN}\n```")
    with registered_chat_model("scripted-approval-answers", model) as name:
        yield name


@pytest.mark.parametrize(
    ("answer", "rows", "status"),
    [
        ("no", [], "failed"),
        ({"approved": False}, [], "failed"),
        (_inbox("accept"), [[6]], "ok"),
        (_inbox("edit", {"action": "approve_sql", "args": {"sql": EDIT}}), [[4]], "ok"),
    ],
)
def test_a_paused_graph_resumed_by_a_review_client(
    model_name: str, answer: Any, rows: Any, status: str
) -> None:
    graph = get_builder("macsql").compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = dataclasses.replace(Context(model=model_name), approve_sql=True)
    graph.invoke(
        {"question": "How many singers?", "db": str(concert_db())}, config, context=context
    )
    out = graph.invoke(Command(resume=answer), config, context=context)
    assert out["status"] == status and out.get("rows") == rows


def test_an_unreadable_answer_is_asked_again_with_the_reason(model_name: str) -> None:
    graph = get_builder("macsql").compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = dataclasses.replace(Context(model=model_name), approve_sql=True)
    graph.invoke(
        {"question": "How many singers?", "db": str(concert_db())}, config, context=context
    )
    out = graph.invoke(Command(resume={"foo": 1}), config, context=context)
    [waiting] = waiting_approvals(graph, config)
    assert out["status"] == "paused" and waiting.sql == SHOWN
    assert waiting.hint and "{'foo': 1} was not understood" in waiting.hint
    out = graph.invoke(Command(resume=True), config, context=context)
    assert out["status"] == "ok" and out["rows"] == [[6]]


@pytest.mark.parametrize(("answer", "rows"), [("yes", [[6]]), ("no", None)])
def test_the_api_reads_a_word_from_approve(model_name: str, answer: str, rows: Any) -> None:
    result = macsql.ask(
        "How many singers?", str(concert_db()), model=model_name, approve=lambda _p: answer
    )
    assert result.rows == rows if rows else result.status == "failed" and result.sql == ""


@pytest.mark.parametrize("answer", [None, 1, {"foo": 1}])
def test_the_api_refuses_an_approve_result_it_cannot_read(model_name: str, answer: Any) -> None:
    with pytest.raises(TypeError, match="approve= must return True, a SQL string or False"):
        macsql.ask(
            "How many singers?", str(concert_db()), model=model_name, approve=lambda _p: answer
        )
