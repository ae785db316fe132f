"""The pipelines by name, imported only when asked for (importing one touches nothing)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

PIPELINES: dict[str, tuple[str, str]] = {
    "macsql": ("macsql.graph.macsql_graph", "MAC-SQL: Selector, Decomposer, Refiner"),
    "sqlfix": (
        "macsql.graph.sqlfix_graph",
        "SQLFixAgent: SQLReviewer, QueryCrafter, SQLRefiner repair the SQLTool's SQL",
    ),
    "r3": (
        "macsql.graph.r3_graph",
        "R^3: a SQL writer and generated reviewers loop to consensus",
    ),
    "macsql+sqlfix": (
        "macsql.graph.macsql_sqlfix_graph",
        "MAC-SQL, then SQLFixAgent as a repair stage on its SQL",
    ),
}


def pipeline_names() -> list[str]:
    return list(PIPELINES)


def get_pipeline(name: str) -> Any:
    """The compiled graph of a pipeline."""
    if name not in PIPELINES:
        raise KeyError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINES)}")
    return import_module(PIPELINES[name][0]).graph


def get_builder(name: str) -> Any:
    """The uncompiled StateGraph of a pipeline, for compiling with a checkpointer."""
    if name not in PIPELINES:
        raise KeyError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINES)}")
    return import_module(PIPELINES[name][0]).builder
