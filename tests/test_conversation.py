"""Follow-up questions (issue 17): history from a checkpointed thread or a `messages` list is used
to make the newest question standalone; without history no model call is added.

Every test talks HTTP to `ScriptedOpenAIServer`, through the real langchain-openai client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from conversation_script import (
    ASKED,
    CONCERT,
    RESULT_VALUES,
    REWRITER,
    ROWS,
    SQL,
    STANDALONE,
    respond,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from macsql.core.context import Context
from macsql.graph.registry import get_builder, get_pipeline
from macsql.testing.scripted import ScriptedOpenAIServer


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(respond) as running:
        yield running


def _context(server: ScriptedOpenAIServer, **changes: Any) -> Context:
    return Context(
        model="openai:scripted",
        base_url=server.base_url,
        api_key="test-key",
        dataset_style="spider",
        max_review_turns=0,  # R^3: the writer's SQL is the answer, no review round
        max_repair_attempts=0,  # SQLFixAgent: the review only
        **changes,
    )


def _rewrites(server: ScriptedOpenAIServer) -> list[str]:
    return [p for p in server.prompts if p.startswith(REWRITER)]


def _writer_prompts(server: ScriptedOpenAIServer) -> list[str]:
    return [p for p in server.prompts if p.startswith("You are the Decomposer")]


def _check_three_turns(outputs: list[dict[str, Any]], server: ScriptedOpenAIServer) -> None:
    assert [o["rows"] for o in outputs] == ROWS
    assert [o["sql"] for o in outputs] == list(SQL.values())
    assert outputs[0]["standalone_question"] == ASKED[0]
    assert [o["standalone_question"] for o in outputs[1:]] == [STANDALONE[q][0] for q in ASKED[1:]]
    turn2, turn3 = _rewrites(server)
    # The rewriter sees the earlier questions and their SQL ...
    assert ASKED[0] in turn2 and SQL[ASKED[0]] in turn2
    assert ASKED[1] in turn3 and SQL[STANDALONE[ASKED[1]][0]] in turn3
    # ... never their rows.
    for prompt in (turn2, turn3):
        assert not any(value in prompt for value in RESULT_VALUES)
    # "Same, but ..." builds on the previous SQL, which the writer is shown; "And the youngest?"
    # does not, and its writer sees no earlier SQL.
    writers = _writer_prompts(server)
    assert SQL[STANDALONE[ASKED[1]][0]] in writers[2]
    assert SQL[ASKED[0]] not in writers[1]


# The model calls of one question with no history, under `_context`'s bounds.
CALLS_WITHOUT_HISTORY = {
    "macsql": {"decomposer": 1},
    "sqlfix": {"decomposer": 1, "reviewer": 1},
    "r3": {"writer": 1},
    "macsql+sqlfix": {"decomposer": 1, "reviewer": 1},
}


@pytest.mark.parametrize("pipeline", list(CALLS_WITHOUT_HISTORY))
@pytest.mark.needs_data("spider")
def test_without_history_no_model_call_is_added(
    pipeline: str, server: ScriptedOpenAIServer
) -> None:
    out = get_pipeline(pipeline).invoke(
        {"question": ASKED[0], "db": CONCERT}, context=_context(server)
    )
    assert out["rows"] == ROWS[0]
    assert out["standalone_question"] == ASKED[0]
    calls = {agent: int(entry["calls"]) for agent, entry in out["usage"].items()}
    assert calls == CALLS_WITHOUT_HISTORY[pipeline]
    assert server.requests == sum(calls.values())


@pytest.mark.needs_data("spider")
def test_three_turns_on_a_checkpointed_thread(server: ScriptedOpenAIServer) -> None:
    graph = get_builder("macsql").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "three-turns"}}
    outputs = [
        graph.invoke({"question": q, "db": CONCERT}, config, context=_context(server))
        for q in ASKED
    ]
    _check_three_turns(outputs, server)
    assert outputs[2]["usage"]["contextualizer"]["calls"] == 1
    # The thread records every turn as it ends: question, standalone question, SQL, outcome.
    turns = graph.get_state(config).values["turns"]
    assert [t["question"] for t in turns] == ASKED
    assert [t["sql"] for t in turns] == list(SQL.values())
    assert [t["outcome"] for t in turns] == ["ok", "ok", "ok"]
    # A new thread has no history: its question is taken as asked, with no rewrite.
    other = {"configurable": {"thread_id": "another"}}
    graph.invoke({"question": ASKED[0], "db": CONCERT}, other, context=_context(server))
    assert len(_rewrites(server)) == 2


@pytest.mark.needs_data("spider")
def test_three_turns_from_a_messages_list(server: ScriptedOpenAIServer) -> None:
    graph = get_pipeline("macsql")
    messages: list[AnyMessage] = []
    outputs = []
    for question in ASKED:
        messages.append(HumanMessage(question))
        out = graph.invoke({"messages": messages, "db": CONCERT}, context=_context(server))
        outputs.append(out)
        # An assistant's reply carrying macsql's SQL; its prose quotes the rows, and is not used.
        messages.append(
            AIMessage(
                f"It is {out['rows'][0][0]}.", additional_kwargs={"macsql": {"sql": out["sql"]}}
            )
        )
    _check_three_turns(outputs, server)


@pytest.mark.parametrize("pipeline", ["sqlfix", "r3", "macsql+sqlfix"])
@pytest.mark.needs_data("spider")
def test_every_pipeline_rewrites_a_follow_up_once(
    pipeline: str, server: ScriptedOpenAIServer
) -> None:
    history: list[AnyMessage] = [
        HumanMessage(ASKED[0]),
        AIMessage("", additional_kwargs={"macsql": {"sql": SQL[ASKED[0]]}}),
        HumanMessage(ASKED[1]),
    ]
    out = get_pipeline(pipeline).invoke(
        {"messages": history, "db": CONCERT}, context=_context(server)
    )
    assert out["standalone_question"] == STANDALONE[ASKED[1]][0]
    assert out["rows"] == ROWS[1]
    assert len(_rewrites(server)) == 1  # the stages of macsql+sqlfix do not rewrite again
    assert out["usage"]["contextualizer"]["calls"] == 1


class _ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    db: str


@pytest.mark.needs_data("spider")
def test_a_messages_state_parent_embeds_macsql_as_a_node(server: ScriptedOpenAIServer) -> None:
    """A MessagesState-style parent adds the macsql graph itself as a node: macsql reads the
    conversation from `messages`; the parent turns its output into the AI message."""

    def reply(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage("done", additional_kwargs={"macsql": {"sql": "x"}})]}

    class ParentState(_ChatState, total=False):
        sql: str
        rows: list[list[Any]]
        standalone_question: str

    builder: Any = StateGraph(ParentState, context_schema=Context)
    builder.add_node("macsql", get_pipeline("macsql"))
    builder.add_node("reply", reply)
    builder.add_edge(START, "macsql")
    builder.add_edge("macsql", "reply")
    parent = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent"}}
    first = parent.invoke(
        {"messages": [HumanMessage(ASKED[0])], "db": CONCERT}, config, context=_context(server)
    )
    assert first["rows"] == ROWS[0]
    second = parent.invoke(
        {"messages": [HumanMessage(ASKED[1])], "db": CONCERT}, config, context=_context(server)
    )
    assert second["standalone_question"] == STANDALONE[ASKED[1]][0]
    assert second["rows"] == ROWS[1]
    assert len(second["messages"]) == 4
    (rewrite,) = _rewrites(server)
    assert ASKED[0] in rewrite


@pytest.mark.needs_data("spider")
def test_the_example_chat_assistant_follows_up_and_answers(server: ScriptedOpenAIServer) -> None:
    from test_subgraph import example

    assistant = example.chat_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "example-chat"}}
    context = _context(server, answer=True)
    for question in ASKED[:2]:
        result = assistant.invoke(
            {"messages": [HumanMessage(question)], "db": CONCERT}, config, context=context
        )
    reply = result["messages"][-1]
    assert reply.content == "The youngest singer from France is Tribal King."  # in words
    assert reply.additional_kwargs["macsql"]["sql"] == SQL[STANDALONE[ASKED[1]][0]]
    (rewrite,) = _rewrites(server)
    assert ASKED[0] in rewrite and SQL[ASKED[0]] in rewrite
    answer_prompts = [p for p in server.prompts if p.startswith("You turn the result")]
    assert "Tribal King" in answer_prompts[-1]


@pytest.mark.needs_data("spider")
def test_a_caller_may_pass_the_earlier_turns_itself(server: ScriptedOpenAIServer) -> None:
    out = get_pipeline("macsql").invoke(
        {
            "question": ASKED[1],
            "db": CONCERT,
            "turns": [{"question": ASKED[0], "sql": SQL[ASKED[0]], "outcome": "ok"}],
        },
        context=_context(server),
    )
    assert out["standalone_question"] == STANDALONE[ASKED[1]][0]
    assert out["rows"] == ROWS[1]
    (rewrite,) = _rewrites(server)
    assert SQL[ASKED[0]] in rewrite


@pytest.mark.parametrize("pipeline", ["sqlfix", "r3", "macsql+sqlfix"])
@pytest.mark.needs_data("spider")
def test_a_follow_up_on_the_previous_sql_shows_it_to_every_pipelines_writer(
    pipeline: str, server: ScriptedOpenAIServer
) -> None:
    youngest = STANDALONE[ASKED[1]][0]
    history: list[AnyMessage] = [
        HumanMessage(ASKED[0]),
        AIMessage("", additional_kwargs={"macsql": {"sql": SQL[ASKED[0]]}}),
        HumanMessage(ASKED[1]),
        AIMessage(f"```sql\n{SQL[youngest]}\n```"),  # SQL in a fence is read too
        HumanMessage(ASKED[2]),
    ]
    out = get_pipeline(pipeline).invoke(
        {"messages": history, "db": CONCERT}, context=_context(server)
    )
    assert out["rows"] == ROWS[2]
    writers = [
        p
        for p in server.prompts
        if p.startswith(("You are the Decomposer", "You are the SQL writer"))
    ]
    assert writers and all(SQL[youngest] in p for p in writers)


@pytest.mark.needs_data("spider")
def test_an_unreachable_rewriter_gives_the_writer_the_previous_question_and_sql(
    tmp_path: Any,
) -> None:
    # No rewrite to use: never the bare follow-up alone (issue 24), and the output says so.
    earlier = {"question": ASKED[0], "sql": SQL[ASKED[0]]}

    def failing_rewriter(prompt: str) -> str | int:
        if prompt.startswith(REWRITER):
            return 503
        asked = prompt.rsplit("[Question]", 1)[1]
        assert ASKED[0] in asked and SQL[ASKED[0]] in asked  # the earlier turn, with its SQL
        return f"```sql\n{SQL[STANDALONE[ASKED[1]][0]]}\n```"

    with ScriptedOpenAIServer(failing_rewriter) as server:
        out = get_pipeline("macsql").invoke(
            {"question": ASKED[1], "db": CONCERT, "turns": [earlier]},
            context=_context(server, model_max_retries=0),
        )
    assert out["standalone_question"].startswith(ASKED[1])
    assert ASKED[0] in out["standalone_question"]
    assert out["status"] == "ok" and out["rows"] == ROWS[1]
    assert out["usage"]["contextualizer"]["calls"] == 1
    assert [(f["agent"], f["kind"]) for f in out["fallbacks"]] == [
        ("contextualizer", "unreadable_reply")
    ]
    assert "the rewriter failed" in out["fallbacks"][0]["detail"]


# --------------------------------------------------------------------------- issue 24

REWRITE_FORMS = {
    "bare question": "{q}",
    "json": '{{"standalone_question": "{q}", "builds_on_previous_sql": false}}',
    "bold label": "**Question:** {q}\n**Builds on the previous SQL:** no",
    "standalone label": "Standalone question: {q}",
    "rewritten label, full-width colon": "Rewritten question：{q}",
    "introduced on the next line": 'Sure! Here is the rewritten question:\n\n"{q}"',
    "after thinking": "<think>Question: And the oldest?</think>\nQuestion: {q}",
}


@pytest.mark.parametrize("form", list(REWRITE_FORMS))
@pytest.mark.needs_data("spider")
def test_the_rewrite_is_read_in_any_form(form: str) -> None:
    standalone = STANDALONE[ASKED[1]][0]

    def rewriter(prompt: str) -> str:
        if prompt.startswith(REWRITER):
            return REWRITE_FORMS[form].format(q=standalone)
        return respond(prompt)

    with ScriptedOpenAIServer(rewriter) as server:
        out = get_pipeline("macsql").invoke(
            {"question": ASKED[1], "db": CONCERT, "turns": [{"question": ASKED[0]}]},
            context=_context(server),
        )
    assert out["standalone_question"] == standalone
    assert out["rows"] == ROWS[1] and out["fallbacks"] == []


@pytest.mark.needs_data("spider")
def test_an_unreadable_rewrite_gives_the_writer_the_previous_question_and_sql() -> None:
    earlier = {"question": ASKED[0], "sql": SQL[ASKED[0]], "outcome": "ok"}

    def rewriter(prompt: str) -> str:
        if prompt.startswith(REWRITER):
            return "I'm sorry, I can't tell what you mean."
        asked = prompt.rsplit("[Question]", 1)[1]
        assert ASKED[1] in asked and ASKED[0] in asked and SQL[ASKED[0]] in asked
        return f"```sql\n{SQL[STANDALONE[ASKED[1]][0]]}\n```"

    with ScriptedOpenAIServer(rewriter) as server:
        out = get_pipeline("macsql").invoke(
            {"question": ASKED[1], "db": CONCERT, "turns": [earlier]}, context=_context(server)
        )
    assert out["rows"] == ROWS[1]
    (fallback,) = out["fallbacks"]
    assert (fallback["agent"], fallback["kind"]) == ("contextualizer", "unreadable_reply")
    assert "held no standalone question" in fallback["detail"]
    assert "previous question and its SQL" in fallback["detail"]


@pytest.mark.needs_data("spider")
def test_a_follow_up_on_an_empty_thread_is_noted() -> None:
    def writer(prompt: str) -> str:
        assert not prompt.startswith(REWRITER)  # nothing to rewrite with: no model call
        return "```sql\nSELECT Name FROM singer\n```"

    with ScriptedOpenAIServer(writer) as server:
        outputs = [
            get_pipeline("macsql").invoke({"question": q, "db": CONCERT}, context=_context(server))
            for q in (ASKED[2], ASKED[0])
        ]
    follow_up, standalone = outputs
    (note,) = follow_up["fallbacks"]
    assert (note["agent"], note["kind"]) == ("contextualizer", "no_history")
    assert "'same'" in note["detail"] and follow_up["status"] == "ok"
    assert standalone["fallbacks"] == []  # a standalone question gets no note
