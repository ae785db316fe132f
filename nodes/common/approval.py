"""The state a run shows while `approve_sql` holds a SQL for a person to approve.

Every node that hands a SQL to the executor passes its update through `awaiting_approval`. With
`approve_sql` on, the executor pauses (`interrupt`) before it runs that SQL, and a paused run
must not read as a failed one: Studio and `invoke` show the state as it is at the pause.
"""

from __future__ import annotations

from typing import TypeVar

from macsql.core.context import BaseContext
from macsql.core.state import PipelineState

StateT = TypeVar("StateT", bound=PipelineState)


def awaiting_approval(update: StateT, context: BaseContext) -> StateT:
    """`update`, marked `paused` when its candidate SQL goes to a person before it runs."""
    if context.approve_sql and update.get("candidate_sql"):
        update["status"] = "paused"
        update["error"] = None
    return update
