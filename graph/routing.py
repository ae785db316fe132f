"""The one place a fatal failure ends a run.

A node that cannot go on (bad input, the model unreachable, a rejected SQL) sets `fatal` with
its reason in the state. Every router of every graph is wrapped in `unless_fatal`, so the run
ends right after that node, and the routers themselves read only the happy path.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Literal, ParamSpec, TypeVar

from langgraph.graph import END

P = ParamSpec("P")
R = TypeVar("R")


def unless_fatal(router: Callable[P, R]) -> Callable[P, R]:
    """`router`, except that a state marked `fatal` goes to END.

    The wrapper keeps the router's annotations, so LangGraph still reads its possible
    destinations (which must include "__end__") from the return type.
    """

    @wraps(router)
    def route(*args: P.args, **kwargs: P.kwargs) -> R:
        state: Any = args[0]
        if state.get("fatal"):
            return END  # type: ignore[return-value]
        return router(*args, **kwargs)

    return route


@unless_fatal
def to_linking(state: Any) -> Literal["link_schema", "__end__"]:
    """After `load_schema`: the linking stage, which every pipeline runs."""
    return "link_schema"
