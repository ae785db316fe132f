"""Per-pipeline contexts, their checks, and the one router that ends a run on a fatal failure."""

from __future__ import annotations

import inspect
import subprocess
import sys
from dataclasses import fields
from types import SimpleNamespace
from typing import Any

import pytest

from macsql.core.context import (
    Agent,
    BaseContext,
    Context,
    ContextError,
    MacSqlContext,
    R3Context,
    SqlFixContext,
    context_of,
)
from macsql.graph.registry import PIPELINES, get_builder, get_pipeline, pipeline_names
from macsql.graph.routed_nodes import routes

GRAPH_CONTEXTS = {
    "macsql": MacSqlContext,
    "sqlfix": SqlFixContext,
    "r3": R3Context,
}


@pytest.mark.parametrize("name", list(GRAPH_CONTEXTS))
def test_each_graph_shows_only_its_own_settings(name: str) -> None:
    graph = get_pipeline(name)
    shown = set(graph.get_context_jsonschema()["properties"])
    assert shown == GRAPH_CONTEXTS[name].field_names()
    others = set().union(*(c.field_names() for n, c in GRAPH_CONTEXTS.items() if n != name))
    own = GRAPH_CONTEXTS[name].field_names()
    assert not (others - own) & shown, "another pipeline's setting is shown"


def test_macsql_does_not_show_r3_or_sqlfix_settings() -> None:
    shown = set(get_pipeline("macsql").get_context_jsonschema()["properties"])
    assert {"k_shot", "num_reviewers", "num_paraphrases", "sql_generator"}.isdisjoint(shown)
    assert {"max_try_times", "selector_model", "query_timeout"} <= shown


def test_the_full_context_has_every_pipelines_fields() -> None:
    every = set().union(*(c.field_names() for c in GRAPH_CONTEXTS.values()))
    assert Context.field_names() == every
    for name in PIPELINES:  # and every graph accepts it
        assert isinstance(Context(), get_builder(name).context_schema)


def test_every_model_calling_agent_has_a_model_field() -> None:
    names = Context.field_names()
    for agent in Agent:
        assert agent.model_field in names, agent


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_try_times", 0, "max_try_times must be at least 1"),
        ("max_try_times", -1, "max_try_times must be at least 1"),
        ("query_timeout", 0.0, "query_timeout must be at least"),
        ("max_rows", 0, "max_rows must be at least 1"),
        ("num_reviewers", 0, "num_reviewers must be at least 1"),
        ("model_max_retries", -2, "model_max_retries must be at least 0"),
        ("dataset_style", "cosql", "dataset_style must be one of bird, spider"),
        ("max_try_times", "3", "max_try_times must be a int"),
        ("max_try_times", True, "max_try_times must be a int"),
        ("approve_sql", "yes", "approve_sql must be a bool"),
        ("model_timeout", float("inf"), "model_timeout must be a finite number"),
        ("model", None, "model must be set"),
    ],
)
def test_out_of_range_settings_are_refused_with_the_field_name(
    field: str, value: Any, message: str
) -> None:
    with pytest.raises(ContextError, match=message):
        Context(**{field: value})


def test_every_numeric_field_declares_its_minimum() -> None:
    for f in fields(Context):
        if str(f.type) in ("int", "float"):
            assert "ge" in f.metadata, f.name


def test_studio_schema_shows_each_range() -> None:
    """Studio builds its settings form from this schema: the range must be in it, not only
    enforced when the run starts."""
    for name in pipeline_names():
        schema = get_pipeline(name).get_context_jsonschema()["properties"]
        assert schema["max_rows"]["minimum"] == 1
        assert schema["model_timeout"]["minimum"] == 0.001
    macsql = get_pipeline("macsql").get_context_jsonschema()["properties"]
    assert macsql["max_try_times"]["minimum"] == 1


def test_graphs_refuse_a_bad_dict_context_before_running() -> None:
    """Studio and the server hand over JSON; LangGraph builds the graph's class from it."""
    with pytest.raises(ContextError, match="max_try_times"):
        get_pipeline("macsql").invoke(
            {"question": "q", "db": "demo"}, context={"max_try_times": -1}
        )


def test_context_of_converts_between_pipeline_classes() -> None:
    class Runtime:
        context: object = None

    runtime = Runtime()
    assert context_of(runtime, MacSqlContext) == MacSqlContext()
    runtime.context = SqlFixContext(model="m", decomposer_model="d", num_paraphrases=5)
    converted = context_of(runtime, MacSqlContext)
    assert (converted.model, converted.decomposer_model) == ("m", "d")
    runtime.context = {"model": "x", "k_shot": 2}
    assert context_of(runtime, MacSqlContext).model == "x"
    full = Context(max_try_times=5)
    runtime.context = full
    assert context_of(runtime, BaseContext) is full


def test_model_for_falls_back_to_the_default_model() -> None:
    context = Context(model="openai:a", refiner_model="openai:b", sql_generator="openai:c")
    assert context.model_for(Agent.REFINER) == "openai:b"
    assert context.model_for(Agent.DECOMPOSER) == "openai:a"
    assert context.model_for(Agent.SQL_TOOL) == "openai:c"
    assert BaseContext(model="openai:a").model_for(Agent.WRITER) == "openai:a"


@pytest.mark.parametrize("name", list(GRAPH_CONTEXTS))
def test_every_router_sends_a_fatal_run_to_finish(name: str) -> None:
    """Every route out of every node reads `fatal` (through `stopped`) and goes to `finish`,
    the one node every run ends through. (The pipeline of pipelines has no `fatal` key: its
    stages end themselves.)"""
    builder = get_builder(name)
    assert "finish" in builder.nodes
    checked = 0
    for source, routers in routes(builder).items():
        if source in ("__start__", "finish", "answer"):
            continue
        for router in routers:
            params = inspect.signature(router).parameters
            given = {"runtime": SimpleNamespace(context=Context()), "config": {}}
            kwargs = {p: given[p] for p in list(params)[1:]}
            assert router({"fatal": True}, **kwargs) == "finish", f"{name}: after {source}"
            checked += 1
    assert checked >= 4


BAD_SET = ("--set", "max_try_times=-1")


def test_set_with_an_out_of_range_value_exits_2_with_one_line(tmp_path: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "macsql.cli.main", "ask", "q", "--db", "demo", *BAD_SET],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "", "MACSQL_CACHE_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test"},
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "max_try_times must be at least 1" in lines[0], done.stderr


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("max_try_times", "0", 0),
        ("model_timeout", "inf", float("inf")),
        ("dataset_style", "cosql", "cosql"),
        ("query_timeout", "-1.5", -1.5),
    ],
)
def test_set_text_and_python_values_meet_the_same_validator(
    name: str, text: str, value: object
) -> None:
    """One definition of a valid setting: `--set` text and a Python value fail alike."""
    from macsql.cli.common import UsageError, parse_context_fields

    with pytest.raises(ContextError) as direct:
        Context(**{name: value})  # type: ignore[arg-type]
    with pytest.raises(UsageError) as given:
        parse_context_fields([f"{name}={text}"])
    assert str(given.value) == f"--set {direct.value}"
