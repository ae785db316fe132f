"""Checkpoints with langgraph-checkpoint-sqlite: history, resuming, and human review of SQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db, wrong_then_fixed
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from macsql.core.context import Agent, Context
from macsql.graph.macsql_graph import builder
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel

CONCERT_DB = concert_db()
QUESTION = {"question": "How many singers do we have?", "db": str(CONCERT_DB)}
WRONG_SQL = "SELECT count(*) FROM singer WHERE singer_nme IS NOT NULL"
EDITED_SQL = "SELECT count(*) FROM singers"  # a person's edit, itself wrong: no such table
FIXED_SQL = "SELECT count(*) FROM singer"
MODEL = "scripted-persistence-test"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def checkpoints(tmp_path: Path) -> Iterator[Callable[[], SqliteSaver]]:
    """Open the same checkpoint file as often as wanted, as separate processes would."""
    connections: list[sqlite3.Connection] = []

    def open_saver() -> SqliteSaver:
        conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
        connections.append(conn)
        return SqliteSaver(conn)

    yield open_saver
    for conn in connections:
        conn.close()


_responder = wrong_then_fixed(WRONG_SQL, FIXED_SQL)


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responder=_responder)
    with registered_chat_model(MODEL, scripted):
        yield scripted


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_run_can_be_inspected_step_by_step(model: ScriptedChatModel, checkpoints: Any) -> None:
    graph = builder.compile(checkpointer=checkpoints())
    config = _config("history")
    result = graph.invoke(QUESTION, config, context=Context(model=MODEL, dataset_style="spider"))
    assert result["sql"] == FIXED_SQL and result["status"] == "ok"

    # A fresh saver on the same file sees the whole history, newest first.
    history = list(builder.compile(checkpointer=checkpoints()).get_state_history(config))
    steps = [snapshot.next for snapshot in reversed(history)]
    assert steps == [
        ("__start__",),
        ("contextualize",),
        ("load_schema",),
        ("link_schema",),
        ("decomposer",),
        ("executor",),
        ("refiner",),
        ("executor",),
        ("finish",),
        ("close_turn",),
        (),
    ]
    by_next = {}
    for snapshot in reversed(history):
        by_next.setdefault(snapshot.next, []).append(snapshot)
    # Before the first execution: the Decomposer's SQL waits as the candidate.
    assert by_next["executor",][0].values["candidate_sql"] == WRONG_SQL
    # Before the Refiner: the failed execution it will read.
    failed = by_next["refiner",][0].values["last_execution"]
    assert failed["sql"] == WRONG_SQL
    assert failed["outcome"] == "unknown_table_or_column"
    assert by_next["executor",][1].values["candidate_sql"] == FIXED_SQL
    answered = by_next["close_turn",][0].values
    assert [t["sql"] for t in answered["tries"]] == [WRONG_SQL, FIXED_SQL]
    # The thread keeps the turn, not the executions: those are emptied once it is answered.
    final = history[0].values
    assert final["tries"] == [] and "rows" not in final
    assert final["turns"][-1]["sql"] == FIXED_SQL and final["turns"][-1]["outcome"] == "ok"
    assert final["usage"]["decomposer"]["calls"] == 1
    assert final["usage"]["refiner"]["calls"] == 1
    # One checkpoint per super-step, numbered from the input (-1) on.
    assert [s.metadata["step"] for s in reversed(history)] == list(range(-1, 10))
    assert history[-1].metadata["source"] == "input"


def test_a_crashed_run_resumes_from_its_last_checkpoint(checkpoints: Any) -> None:
    """The process dies during the Refiner's model call; a new process resumes there."""
    crashing = ScriptedChatModel(responder=[f"```sql\n{WRONG_SQL}\n```", KeyboardInterrupt()])
    config = _config("crash")
    context = Context(model=MODEL, dataset_style="spider")
    with registered_chat_model(MODEL, crashing), pytest.raises(KeyboardInterrupt):
        builder.compile(checkpointer=checkpoints()).invoke(QUESTION, config, context=context)

    graph = builder.compile(checkpointer=checkpoints())
    stopped = graph.get_state(config)
    assert stopped.next == ("refiner",)
    assert stopped.values["attempts"] == 1

    healthy = ScriptedChatModel(responder=_responder)
    with registered_chat_model(MODEL, healthy):
        result = graph.invoke(None, config, context=context)
    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["attempts"] == 2
    # Only the Refiner ran again: the schema and the Decomposer's work were kept.
    assert [p.split("\n", 1)[0][:22] for p in healthy.prompts] == ["You are the Refiner in"]


def test_review_edit_then_approve(model: ScriptedChatModel, checkpoints: Any) -> None:
    config = _config("review")
    context = Context(model=MODEL, dataset_style="spider", approve_sql=True)
    graph = builder.compile(checkpointer=checkpoints())

    first = graph.invoke(QUESTION, config, context=context)
    (question,) = first["__interrupt__"]
    assert question.value["action"] == "approve_sql"
    assert question.value["sql"] == WRONG_SQL
    assert question.value["attempt"] == 1
    paused = graph.get_state(config)
    assert paused.next == ("approve",)
    assert "tries" in paused.values and paused.values["tries"] == []  # nothing ran yet

    # A person edits the SQL; a new process resumes the thread with the edit.
    graph = builder.compile(checkpointer=checkpoints())
    events: list[dict[str, Any]] = []
    for chunk in graph.stream(
        Command(resume=EDITED_SQL), config, context=context, stream_mode=["custom", "values"]
    ):
        mode, data = chunk
        if mode == "custom":
            events.append(data)
        else:
            last_values = data
    second = graph.get_state(config)
    (question,) = [i for task in second.tasks for i in task.interrupts]
    # The edited SQL was executed (it fails: no such table), then the Refiner fixed it ...
    executed = [e["sql"] for e in events if e["agent"] == "executor" and e["phase"] == "start"]
    assert executed == [EDITED_SQL]
    assert [t["sql"] for t in last_values["tries"]] == [EDITED_SQL]
    assert "singers" in last_values["tries"][0]["error"]
    assert EDITED_SQL in model.prompts[-1] and model.agents[-1] == Agent.REFINER
    # ... and its SQL waits for approval in turn.
    assert question.value["sql"] == FIXED_SQL
    assert question.value["attempt"] == 2

    result = graph.invoke(Command(resume=True), config, context=context)
    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["rows"] == [[6]]
    assert result["attempts"] == 2
    # The run's executions, as they stood when the turn was answered (then emptied).
    answered = next(s for s in graph.get_state_history(config) if s.next == ("close_turn",))
    assert [t["sql"] for t in answered.values["tries"]] == [EDITED_SQL, FIXED_SQL]
    assert WRONG_SQL not in [t["sql"] for t in answered.values["tries"]]
    assert len(model.prompts) == 2  # the Decomposer once, the Refiner once


def test_review_edit_as_dict_runs_that_sql(model: ScriptedChatModel, checkpoints: Any) -> None:
    config = _config("review-dict")
    context = Context(model=MODEL, dataset_style="spider", approve_sql=True)
    graph = builder.compile(checkpointer=checkpoints())
    graph.invoke(QUESTION, config, context=context)
    result = graph.invoke(Command(resume={"sql": FIXED_SQL}), config, context=context)
    assert result["sql"] == FIXED_SQL
    assert result["status"] == "ok"
    assert result["attempts"] == 1
    assert len(model.prompts) == 1  # no Refiner needed


def test_review_reject_stops_the_run(model: ScriptedChatModel, checkpoints: Any) -> None:
    config = _config("review-reject")
    context = Context(model=MODEL, dataset_style="spider", approve_sql=True)
    graph = builder.compile(checkpointer=checkpoints())
    graph.invoke(QUESTION, config, context=context)
    result = graph.invoke(Command(resume=False), config, context=context)
    assert result["status"] == "failed"
    assert "rejected" in result["error"]
    assert result.get("attempts", 0) == 0
    assert graph.get_state(config).next == ()
    assert len(model.prompts) == 1
