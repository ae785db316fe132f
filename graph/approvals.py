"""A run paused for approval (`approve_sql`): what is waiting, and the command that resumes it.

A paused run's interrupts carry `{"action": "approve_sql", "sql", "attempt", "hint"}`; a run is
resumed with `Command(resume=True)` to run the SQL, a new SQL string to run that instead, or
False to stop. One run may pause several times in a row (each SQL a pipeline executes goes to
the person in turn), and when several pauses wait at once, each gets its own decision, keyed by
the interrupt's id. The command line and the Python API both go through `resume_command`, in a
loop that ends when nothing waits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command

from macsql.nodes.common.approval import read_decision

APPROVE_ACTION = "approve_sql"

Decision = bool | str
"""True: run the SQL as it is; a string: run this SQL instead; False: stop the run."""


@dataclass(frozen=True)
class Waiting:
    """One SQL waiting for a person."""

    id: str
    sql: str
    attempt: int | None
    hint: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "attempt": self.attempt, "hint": self.hint}


def new_thread_id() -> str:
    return uuid.uuid4().hex[:12]


def waiting_approvals(graph: Any, config: Mapping[str, Any]) -> list[Waiting]:
    """The SQL waiting for approval on the thread, in the order the run reached them."""
    snapshot = graph.get_state(config)
    found = list(getattr(snapshot, "interrupts", ()) or ())
    if not found:  # older snapshots list them per task only
        found = [i for task in snapshot.tasks for i in task.interrupts]
    out = []
    for interrupt in found:
        value = interrupt.value
        if isinstance(value, Mapping) and value.get("action") == APPROVE_ACTION:
            out.append(_waiting(interrupt.id, value))
    return out


def _waiting(interrupt_id: str, value: Mapping[str, Any]) -> Waiting:
    return Waiting(
        id=interrupt_id,
        sql=str(value.get("sql") or ""),
        attempt=value.get("attempt"),
        hint=value.get("hint"),
    )


def waiting_in_output(output: Mapping[str, Any]) -> list[Waiting]:
    """The SQL waiting for approval, from a run's output (its `__interrupt__`: `Interrupt`
    objects in process, their JSON from a server)."""
    out = []
    for interrupt in output.get("__interrupt__") or ():
        value = interrupt.get("value") if isinstance(interrupt, Mapping) else interrupt.value
        found = interrupt.get("id") if isinstance(interrupt, Mapping) else interrupt.id
        if isinstance(value, Mapping) and value.get("action") == APPROVE_ACTION:
            out.append(_waiting(str(found or ""), value))
    return out


def resume_command(waiting: Sequence[Waiting], decisions: Sequence[Decision]) -> Command[Any]:
    """The `Command` that hands each waiting SQL its decision: the value alone when one SQL
    waits, else a map from interrupt id to value."""
    if len(waiting) != len(decisions):
        raise ValueError("one decision per waiting SQL")
    if len(waiting) == 1:
        return Command(resume=decisions[0])
    return Command(resume={w.id: d for w, d in zip(waiting, decisions, strict=True)})


def decision_problem(answer: Any, sql: str) -> str | None:
    """Why `answer` is not a decision about `sql` (None when it is one: the graph reads it the
    same way). A caller that loops until nothing waits checks this first, since the graph asks
    again about an answer it cannot read."""
    if answer is None:  # LangGraph cannot resume with None
        return "None is not a decision"
    return read_decision(answer, sql).problem
