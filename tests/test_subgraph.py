"""macsql embedded in a parent assistant graph, both ways (examples/assistant_subgraph.py)."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import concert_db, wrong_then_fixed
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from macsql.core.context import Agent, Context
from macsql.core.state import MacSqlInput, MacSqlOutput
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
CONCERT_DB = concert_db()
WRONG_SQL = "SELECT count(*) FROM singer WHERE singer_nme IS NOT NULL"
FIXED_SQL = "SELECT count(*) FROM singer"
MODEL_NAME = "scripted-subgraph-test"


def _load_example() -> ModuleType:
    path = ROOT / "examples" / "assistant_subgraph.py"
    spec = importlib.util.spec_from_file_location("macsql_example_assistant_subgraph", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


_sql_responder = wrong_then_fixed(WRONG_SQL, FIXED_SQL)
REWRITER = "You help a text-to-SQL system follow a conversation"


def _rewrite(prompt: str) -> str:
    """The follow-up rewriter's reply, which keeps the newest message."""
    newest = prompt.split("Newest message:", 1)[1].splitlines()[0].strip()
    return f"Question: {newest}\nBuilds on the previous SQL: no"


# MAC-SQL's replies, and the follow-up rewriter's.
_responder = {**_sql_responder, Agent.CONTEXTUALIZER: _rewrite}


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responder=_responder)
    with registered_chat_model(MODEL_NAME, scripted):
        yield scripted


def _context(**changes: Any) -> Context:
    return Context(model=MODEL_NAME, dataset_style="spider", **changes)


def _turn(question: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(question)], "db": str(CONCERT_DB)}


BUILDERS = {"direct": "direct_builder", "wrapper": "wrapper_builder"}
# The namespace macsql's own events come from: the parent node that runs it.
SUBGRAPH_NODE = {"direct": "macsql", "wrapper": "ask_database"}
MACSQL_INTERNAL_KEYS = {"schema", "schema_text", "candidate_sql", "tries", "refines", "fatal"}


def _compile(way: str, checkpointer: Any = None) -> Any:
    return getattr(example, BUILDERS[way]).compile(checkpointer=checkpointer)


def test_direct_parent_shares_macsql_input_keys_and_only_output_keys() -> None:
    state_keys = set(example.DirectAssistantState.__annotations__)
    # The parent provides every key macsql reads ...
    assert {"question", "db", "evidence"} <= state_keys
    # ... and nothing else of macsql's apart from output keys.
    assert state_keys - {"messages"} <= set(MacSqlInput.__annotations__) | set(
        MacSqlOutput.__annotations__
    )


def test_direct_parent_gets_output_only_and_no_duplicates_over_two_turns(
    model: ScriptedChatModel,
) -> None:
    assistant = _compile("direct", InMemorySaver())
    config = {"configurable": {"thread_id": "direct-1"}}
    macsql_outputs: list[dict[str, Any]] = []
    for chunk in assistant.stream(
        _turn("How many singers do we have?"), config, context=_context(), stream_mode="updates"
    ):
        if "macsql" in chunk:
            macsql_outputs.append(chunk["macsql"])
    (macsql_output,) = macsql_outputs
    # What macsql handed back is its narrow output, no internal key.
    assert not MACSQL_INTERNAL_KEYS & set(macsql_output)
    assert set(macsql_output) <= set(MacSqlOutput.__annotations__)

    values = assistant.get_state(config).values
    assert not MACSQL_INTERNAL_KEYS & set(values)
    assert values["sql"] == FIXED_SQL
    assert values["rows"] == [[6]]
    assert values["attempts"] == 2
    # The reducer pitfall: usage is macsql's own total, not counted twice.
    assert values["usage"] == macsql_output["usage"]
    assert values["usage"]["decomposer"]["calls"] == 1
    assert values["usage"]["refiner"]["calls"] == 1
    assert [type(m) for m in values["messages"]] == [HumanMessage, AIMessage]
    # the column is named after the text that ran (the guard's, which writes COUNT)
    assert [x.lower() for x in values["messages"][-1].content.splitlines()[-2:]] == [
        "count(*)",
        "6",
    ]

    # A second turn on the same thread: messages append once each, usage adds up once.
    result = assistant.invoke(_turn("And how many singers again?"), config, context=_context())
    assert set(result) == {"messages"}  # the parent's own narrow output
    messages = result["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert len({m.id for m in messages}) == 4
    usage = assistant.get_state(config).values["usage"]
    assert usage["decomposer"]["calls"] == 2
    assert usage["refiner"]["calls"] == 2
    assert usage["decomposer"]["input_tokens"] == 2 * values["usage"]["decomposer"]["input_tokens"]
    # The second question came with the conversation, so it was first made standalone.
    assert len(model.prompts) == 5
    assert model.prompts[2].startswith(REWRITER)
    assert "How many singers do we have?" in model.prompts[2]
    assert usage["contextualizer"]["calls"] == 1


def test_wrapper_maps_last_message_in_and_only_output_back(model: ScriptedChatModel) -> None:
    assistant = _compile("wrapper", InMemorySaver())
    config = {"configurable": {"thread_id": "wrapper-1"}}
    history = [HumanMessage("hello"), AIMessage("Hi! Ask me about the concert database.")]
    question = HumanMessage("How many singers do we have?")
    result = assistant.invoke(
        {"messages": [*history, question], "db": str(CONCERT_DB)},
        config,
        context=_context(),
    )
    assert set(result) == {"messages"}
    assert len(result["messages"]) == 4
    answer = result["messages"][-1]
    assert isinstance(answer, AIMessage) and answer.name == "macsql"
    assert FIXED_SQL in answer.content
    # Only the last user message became the question.
    assert "How many singers do we have?" in model.prompts[0]
    assert "Ask me about the concert database" not in model.prompts[0]

    values = assistant.get_state(config).values
    assert set(values) == {"messages", "db", "last_sql", "usage"}
    assert values["last_sql"] == FIXED_SQL
    assert values["usage"]["decomposer"]["calls"] == 1
    assert values["usage"]["refiner"]["calls"] == 1


@pytest.mark.parametrize("way", ["direct", "wrapper"])
def test_streams_macsql_events_with_subgraphs_true(way: str, model: ScriptedChatModel) -> None:
    assistant = _compile(way)
    seen: list[tuple[tuple[str, ...], str, Any]] = list(
        assistant.stream(
            _turn("How many singers do we have?"),
            context=_context(),
            stream_mode=["updates", "custom"],
            subgraphs=True,
        )
    )
    inner = [(ns, mode, chunk) for ns, mode, chunk in seen if ns]
    assert inner, "no events from inside macsql"
    assert all(ns[0].split(":")[0] == SUBGRAPH_NODE[way] for ns, _, _ in inner)
    inner_nodes = [next(iter(chunk)) for _, mode, chunk in inner if mode == "updates"]
    # The direct parent shares `messages` with macsql, a conversation to read; the wrapper
    # sends the question alone, and a run with no conversation skips `contextualize`.
    assert inner_nodes == [
        *(["contextualize"] if way == "direct" else []),
        "load_schema",
        "link_schema",
        "decomposer",
        "executor",
        "refiner",
        "executor",
        "finish",
    ]
    outcomes = [
        chunk["outcome"]
        for _, mode, chunk in inner
        if mode == "custom" and chunk["agent"] == "executor" and chunk["phase"] == "done"
    ]
    assert outcomes == ["unknown_table_or_column", "ok"]
    # The parent's own updates come with an empty namespace.
    outer_nodes = [next(iter(c)) for ns, mode, c in seen if not ns and mode == "updates"]
    assert SUBGRAPH_NODE[way] in outer_nodes


@pytest.mark.parametrize("way", ["direct", "wrapper"])
def test_runtime_context_reaches_macsql(way: str, model: ScriptedChatModel) -> None:
    assistant = _compile(way, InMemorySaver())
    config = {"configurable": {"thread_id": f"context-{way}"}}
    assistant.invoke(_turn("How many singers?"), config, context=_context(max_try_times=1))
    # One try only: the failed SQL is not refined.
    assert len(model.prompts) == 1
    assert model.agents[0] == Agent.DECOMPOSER
    values = assistant.get_state(config).values
    assert values["usage"] == {"decomposer": values["usage"]["decomposer"]}
    assert "could not answer" in values["messages"][-1].content
    if way == "direct":
        assert values["attempts"] == 1
        assert values["status"] == "failed"


@pytest.mark.parametrize("way", ["direct", "wrapper"])
def test_parent_checkpointer_persists_macsql_state_across_an_interrupt(
    way: str, model: ScriptedChatModel, tmp_path: Path
) -> None:
    db_file = tmp_path / "checkpoints.sqlite"
    config = {"configurable": {"thread_id": f"review-{way}"}}
    context = _context(approve_sql=True)

    connection = sqlite3.connect(db_file, check_same_thread=False)
    assistant = _compile(way, SqliteSaver(connection))
    assistant.invoke(_turn("How many singers do we have?"), config, context=context)
    connection.close()  # the process could end here

    connection = sqlite3.connect(db_file, check_same_thread=False)
    try:
        assistant = _compile(way, SqliteSaver(connection))
        paused = assistant.get_state(config, subgraphs=True)
        assert paused.next == (SUBGRAPH_NODE[way],)
        (task,) = paused.tasks
        (pending,) = task.interrupts
        assert pending.value["sql"] == WRONG_SQL
        inner = task.state  # macsql's own checkpoint, saved by the parent's checkpointer
        assert inner is not None and inner.next == ("approve",)
        assert inner.values["candidate_sql"] == WRONG_SQL
        assert inner.values["usage"]["decomposer"]["calls"] == 1

        result = assistant.invoke(Command(resume=FIXED_SQL), config, context=context)
    finally:
        connection.close()
    assert FIXED_SQL in result["messages"][-1].content
    assert len(model.prompts) == 1  # resumed inside macsql: the Decomposer did not run again


@pytest.mark.parametrize(
    "content",
    [
        "How many singers?",
        [{"type": "text", "text": "How many singers?"}],
        [{"type": "text", "text": "How many"}, {"type": "text", "text": "singers?"}],
        ["How many", {"type": "image_url", "image_url": {"url": "x"}}, "singers?"],
        [
            {"type": "image", "url": "x"},
            {"text": "How many "},
            {"type": "text", "text": "singers?"},
        ],
    ],
)
def test_the_example_reads_a_question_in_content_blocks_as_its_words(content: Any) -> None:
    messages = [HumanMessage(content=content), AIMessage("one moment")]
    assert example.last_user_text(messages) == "How many singers?"
