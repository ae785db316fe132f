"""The pipelines as `macsql serve` hands them to the engine: the registry's compiled graphs, with
two server-side choices made on them.

- The context's JSON schema is built once per schema class. The engine asks for it on every run
  (to filter a run's context), and pydantic rebuilds it each time: a tenth of a worker's time
  per run, measured (docs/benchmarks/server.md).
- Checkpoints are written when a run ends (LangGraph's `durability="exit"`), not after every
  step: a run costs one checkpoint write instead of one per node. A run that pauses for approval
  still leaves its checkpoint (the pause ends the run), and a run cut short by a lost process
  leaves its thread as the previous run left it, never half a turn. A client that wants every
  step kept passes `durability` itself.

The engine loads each graph from this file by name (`graphs.py:macsql`, ...); `GRAPH_ATTRIBUTES`
maps the registry's names, which are not all identifiers, to those names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cache
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import TypeAdapter

from macsql.graph.registry import PIPELINES, get_pipeline

SERVED_DURABILITY = "exit"


@cache
def _context_jsonschema(schema: Any) -> dict[str, Any]:
    return TypeAdapter(schema).json_schema()


class ServedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled pipeline as the server runs it (see the module's doc)."""

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        schema: Any = self.context_schema
        return None if schema is None else _context_jsonschema(schema)

    def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        # Only with a checkpointer of its own (the server's): LangGraph warns otherwise.
        if kwargs.get("durability") is None and isinstance(self.checkpointer, BaseCheckpointSaver):
            kwargs["durability"] = SERVED_DURABILITY
        return super().astream(*args, **kwargs)


def served(graph: CompiledStateGraph[Any, Any, Any, Any]) -> ServedGraph:
    """`graph` as a `ServedGraph` (a copy, the way LangGraph copies a compiled graph)."""
    attributes = {k: v for k, v in graph.__dict__.items() if k != "__orig_class__"}
    return ServedGraph(**attributes)


def attribute_name(pipeline: str) -> str:
    return pipeline.replace("+", "_")


GRAPH_ATTRIBUTES = {name: attribute_name(name) for name in PIPELINES}


def served_graph(pipeline: str) -> ServedGraph:
    """The served form of a registry pipeline (a `KeyError` names the known ones)."""
    return served(get_pipeline(pipeline))


def __getattr__(name: str) -> ServedGraph:
    """`macsql`, `sqlfix`, `r3`, `macsql_sqlfix`: built on first access, then kept."""
    for pipeline, attribute in GRAPH_ATTRIBUTES.items():
        if attribute == name:
            graph = served_graph(pipeline)
            globals()[name] = graph
            return graph
    raise AttributeError(name)
