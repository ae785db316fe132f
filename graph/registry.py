"""The pipelines by name, imported only when asked for (importing one touches nothing).

This is the one registry: the command line, the eval runner and the tests resolve pipelines
here; ``langgraph.json`` names the same graphs for the LangGraph server, and a test keeps the
two in agreement.
"""

from __future__ import annotations

import importlib.util
from importlib import import_module
from pathlib import Path
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


def resolve_pipeline(name: str) -> Any:
    """A compiled graph by registry name, ``module:attribute`` or ``path/to/file.py:attribute``.

    An attribute that has no ``ainvoke`` is called (a factory) to get the graph.
    """
    if ":" not in name:
        return get_pipeline(name)
    target, _, attr = name.rpartition(":")
    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(target).stem, target)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load pipeline file {target}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = import_module(target)
    obj = getattr(module, attr)
    return obj if hasattr(obj, "ainvoke") else obj()
