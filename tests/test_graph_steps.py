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

from macsql.core.context import Context
from macsql.graph.registry import get_builder, get_pipeline
from macsql.llm.models import registered_chat_model
from macsql.nodes.common.contextualize import has_conversation
from macsql.testing.scripted import ScriptedChatModel

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
def test_every_run_ends_through_finish_and_answers_only_when_asked(
    answer: bool, model: ScriptedChatModel
) -> None:
    runs = _RunNames()
    out = get_pipeline("macsql").invoke(
        {"question": ASKED[0], "db": CONCERT},
        {"callbacks": [runs]},
        context=_context(answer=answer),
    )
    assert out["rows"] == ROWS[0] and out["status"] == "ok"
    assert "finish" in runs.names
    assert ("answer" in runs.names) is answer and bool(out.get("answer")) is answer


# LangGraph's own channels: the start, the branches' triggers, the pending sends.
_LANGGRAPH_CHANNELS = ("__start__", "__pregel_", "branch:to:")


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_graph_carries_only_its_own_state_keys(pipeline: str) -> None:
    """Every router step copies every channel of the graph: a key no node of this pipeline
    reads or writes (another pipeline's, through a shared node's wide type) costs each step.
    A graph's channels are its state's keys, the shared keys every pipeline has, and the keys
    of a node's own payload (a `Send`'s); never another pipeline's state."""
    from macsql.core.state import PipelineState

    builder = get_builder(pipeline)
    states = {get_builder(p).state_schema for p in PIPELINES}
    allowed = set(builder.state_schema.__annotations__) | set(PipelineState.__annotations__)
    for schema in (builder.input_schema, builder.output_schema):
        allowed |= set(getattr(schema, "__annotations__", {}))
    for node in builder.nodes.values():
        if node.input_schema not in states:
            allowed |= set(getattr(node.input_schema, "__annotations__", {}))
    graph = get_pipeline(pipeline)
    extra = {
        name
        for name in graph.channels
        if not name.startswith(_LANGGRAPH_CHANNELS) and name not in allowed
    }
    assert not extra, f"{pipeline}: channels of no key of its state: {sorted(extra)}"
