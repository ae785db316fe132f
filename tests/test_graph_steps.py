"""The steps a run pays for. A run with no conversation skips the `contextualize` step (one
graph step less per eval item) and ends with the same output; a run with history, messages or a
checkpointed thread still takes it, so follow-ups on a thread keep working. `Context.answer`'s
reroute calls the router it wraps directly, not as a second traced run inside its own."""

from __future__ import annotations

from typing import Any

import pytest
from conversation_script import ASKED, CONCERT, REWRITER, ROWS, STANDALONE, respond
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from macsql.graph.context import Context
from macsql.graph.registry import get_builder, get_pipeline
from macsql.llm.models import registered_chat_model
from macsql.nodes.conversation import has_conversation
from macsql.tools.scripted import ScriptedChatModel

PIPELINES = ["macsql", "sqlfix", "r3", "macsql+sqlfix"]


@pytest.fixture
def model() -> Any:
    scripted = ScriptedChatModel(responder=respond)
    with registered_chat_model("scripted:skip-test", scripted):
        yield scripted


def _context(**changes: Any) -> Context:
    return Context(
        model="scripted:skip-test",
        dataset_style="spider",
        max_review_turns=0,
        max_repair_attempts=0,
        **changes,
    )


def _run(graph: Any, given: dict[str, Any], config: Any = None) -> tuple[list[str], dict]:
    """The nodes that ran (subgraphs' included) and the run's output."""
    nodes: list[str] = []
    output: dict[str, Any] = {}
    for namespace, mode, chunk in graph.stream(
        given, config, context=_context(), stream_mode=["updates", "values"], subgraphs=True
    ):
        if mode == "updates":
            nodes += [name for name in chunk if name != "__interrupt__"]
        elif not namespace:
            output = chunk
    return nodes, output


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.needs_data("spider")
def test_a_single_question_skips_contextualize_with_the_same_output(
    pipeline: str, model: ScriptedChatModel
) -> None:
    nodes, state = _run(get_pipeline(pipeline), {"question": ASKED[0], "db": CONCERT})
    assert "contextualize" not in nodes
    assert nodes[0] in ("load_schema", "macsql")
    assert state["rows"] == ROWS[0]
    # The key contextualize would have written is still there, for the output.
    assert state["standalone_question"] == ASKED[0]
    out = get_pipeline(pipeline).invoke({"question": ASKED[0], "db": CONCERT}, context=_context())
    assert out["standalone_question"] == ASKED[0] and out["rows"] == ROWS[0]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.needs_data("spider")
def test_history_still_goes_through_contextualize(pipeline: str, model: ScriptedChatModel) -> None:
    given = {
        "question": ASKED[1],
        "db": CONCERT,
        "turns": [{"question": ASKED[0], "sql": "SELECT 1"}],
    }
    nodes, state = _run(get_pipeline(pipeline), given)
    assert nodes[0] == "contextualize"
    assert [p for p in model.prompts if p.startswith(REWRITER)]
    assert state["standalone_question"] == STANDALONE[ASKED[1]][0]


@pytest.mark.needs_data("spider")
def test_a_thread_records_its_first_question_for_the_next(model: ScriptedChatModel) -> None:
    graph = get_builder("macsql").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "skip-thread"}}
    first, _ = _run(graph, {"question": ASKED[0], "db": CONCERT}, config)
    assert first[0] == "contextualize"  # no history yet, but the next turn reads this one
    second, state = _run(graph, {"question": ASKED[1], "db": CONCERT}, config)
    rewrites = [p for p in model.prompts if p.startswith(REWRITER)]
    assert second[0] == "contextualize" and len(rewrites) == 1
    assert ASKED[0] in rewrites[0]
    assert state["standalone_question"] == STANDALONE[ASKED[1]][0]
    assert state["rows"] == ROWS[1]


@pytest.mark.needs_data("spider")
def test_a_question_with_spaces_around_it_is_cleaned_by_contextualize(
    model: ScriptedChatModel,
) -> None:
    nodes, state = _run(get_pipeline("macsql"), {"question": f"  {ASKED[0]} ", "db": CONCERT})
    assert nodes[0] == "contextualize"
    assert state["standalone_question"] == ASKED[0]


@pytest.mark.parametrize(
    ("state", "on_thread", "expected"),
    [
        ({"question": "q"}, False, False),
        ({"question": "q", "standalone_question": "q"}, False, False),
        ({"question": "q", "standalone_question": "q", "previous_sql": "SELECT 1"}, False, False),
        ({"question": "q"}, True, True),
        ({"question": "q", "turns": [{"question": "p"}]}, False, True),
        ({"question": "", "messages": ["m"]}, False, True),
        ({"question": "q", "asked": "p"}, False, True),
        ({"question": " q"}, False, True),
        ({"question": ""}, False, True),
        ({"question": "q", "standalone_question": "other"}, False, True),
        # contextualize drops a previous_sql that comes without its standalone question
        ({"question": "q", "previous_sql": "SELECT 1"}, False, True),
    ],
)
def test_which_runs_have_a_conversation(state: Any, on_thread: bool, expected: bool) -> None:
    assert has_conversation(state, on_thread) is expected


class _RunNames(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(str(kwargs.get("name")))


@pytest.mark.parametrize("answer", [False, True])
@pytest.mark.needs_data("spider")
def test_the_answer_reroute_runs_its_router_inline(answer: bool, model: ScriptedChatModel) -> None:
    runs = _RunNames()
    out = get_pipeline("macsql").invoke(
        {"question": ASKED[0], "db": CONCERT},
        {"callbacks": [runs]},
        context=_context(answer=answer),
    )
    assert out["rows"] == ROWS[0]
    assert ("answer" in runs.names) is answer and bool(out.get("answer")) is answer
    # Each ending wraps the routes that can end the run: `answer`, then `close_turn`.
    routes = [n for n in runs.names if n.endswith("_or_answer_or_close_turn")]
    assert "route_after_execution_or_answer_or_close_turn" in routes
    # The wrapped routers ran, but none as a run of its own.
    inner = {r.removesuffix("_or_close_turn") for r in routes}
    assert not (inner | {r.removesuffix("_or_answer") for r in inner}) & set(runs.names)
